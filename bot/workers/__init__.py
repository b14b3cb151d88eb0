"""Several workers on PostgreSQL: the durable turn queue, outbox, wake-ups, leadership."""
