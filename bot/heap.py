"""The start-up heap, frozen once per process so the cyclic collector never rescans it.

A full collection walks every tracked object: with modules, config and caches loaded that is
a ~60 ms stall of the event loop (the paced pipeline benchmark's worst message), for objects
that live as long as the process anyway.
"""

from __future__ import annotations

import gc


def freeze_startup_heap() -> None:
    """Collect once, then move everything still alive out of the collector's sight."""
    if gc.get_freeze_count():
        return  # an earlier start in this process already froze its heap
    gc.collect()
    gc.freeze()
