"""Placeholder replaced by the scheduler work."""

from __future__ import annotations

from typing import Any


def next_run_text(settings: Any, config: Any) -> str:
    return "-"
