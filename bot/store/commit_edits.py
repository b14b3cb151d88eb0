"""Which rows of a compaction's commit are copies of stored rows, to refresh from them.

A member may edit a message the compaction read while its summary was being written. The edit
is applied after the commit, as to any archived row; the copies the commit inserts of edited
rows take their text as it is at the commit (SPEC 17: edits never starve a compaction).
"""

from __future__ import annotations

from collections.abc import Sequence

from compactbot.bot.store.message_records import NewMessage


def verbatim_copies(
    compacted: Sequence[NewMessage], inserted_ids: Sequence[int]
) -> list[tuple[int, int]]:
    """(original id, copy id) of each verbatim copy among the rows just inserted."""
    return [
        (message.copy_of, new_id)
        for message, new_id in zip(compacted, inserted_ids, strict=True)
        if message.copy_of is not None and message.copied_tokens is None
    ]


def merged_copies(
    compacted: Sequence[NewMessage], inserted_ids: Sequence[int]
) -> list[tuple[NewMessage, int, int]]:
    """(row, original id, copy id) of each inserted copy with a summary merged into it."""
    return [
        (message, message.copy_of, new_id)
        for message, new_id in zip(compacted, inserted_ids, strict=True)
        if message.copy_of is not None and message.copied_tokens is not None
    ]
