"""The PostgreSQL backend: every storage protocol on asyncpg, a module per protocol."""
