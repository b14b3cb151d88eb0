"""Search results shared by the backends: one hit per distinct text, newest first."""

from __future__ import annotations

from collections.abc import Iterable

from compactbot.bot.store.base import SearchHit

MAX_SEARCH_LIMIT = 100
# A compaction copies the tail, so the same text can exist archived and active: fetch extra.
FETCH_FACTOR = 3


def clamp_limit(limit: int) -> int:
    return max(1, min(limit, MAX_SEARCH_LIMIT))


def distinct_hits(hits: Iterable[SearchHit], limit: int) -> list[SearchHit]:
    """The first `limit` hits whose (session, role, text) was not seen before."""
    seen: set[tuple[int, str, str]] = set()
    out: list[SearchHit] = []
    for hit in hits:
        key = (hit.session_id, hit.role, hit.text)
        if key not in seen:
            seen.add(key)
            out.append(hit)
            if len(out) == limit:
                break
    return out
