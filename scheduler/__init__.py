"""Overnight compaction (SPEC 10): quiet-window maths, session selection, the job, its scheduler."""
