"""Compacting a stored session: lease, compress, one-transaction commit, report."""
