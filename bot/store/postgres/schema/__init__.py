"""The PostgreSQL schema: numbered migrations and how a database is brought up to date."""
