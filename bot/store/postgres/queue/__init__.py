"""The durable turn queue on PostgreSQL (SPEC 15): the inbox, the reply outbox, its pacing."""
