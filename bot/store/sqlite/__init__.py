"""The SQLite backend: every storage protocol on one SQLite file, a module per protocol."""
