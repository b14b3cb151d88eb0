"""The SQLite schema: numbered migrations and how a database file is brought up to date."""
