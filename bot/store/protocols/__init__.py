"""The storage protocols, one per concept, that code names instead of the whole `Store`."""
