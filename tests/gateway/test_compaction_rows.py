from __future__ import annotations

from compactbot.bot.compaction.rows import to_rows
from compactbot.bot.store.base import StoredMessage
from compactbot.compression.template import merge_into, wrap_summary
from compactbot.compression.tokens import counter_for


def stored(i: int, text: str, author: str) -> StoredMessage:
    return StoredMessage(
        id=i,
        session_id=1,
        role="user",
        content=text,
        tokens=5,
        created_at=1000.0 + i,
        active=True,
        compacted=False,
        kind="message",
        author_id=author.lower(),
        author_name=author,
        platform_message_id=f"p{i}",
    )


def test_carried_and_merged_rows_keep_their_author() -> None:
    originals = [stored(1, "[Bob] the plan", "Bob"), stored(2, "[Ann] sounds good", "Ann")]
    merged = merge_into("[Ann] sounds good", wrap_summary("## Decisions\n- plan agreed"))
    rows = to_rows(
        [{"role": "user", "content": "[Bob] the plan"}, {"role": "user", "content": merged}],
        originals,
        counter_for(None),
    )
    assert [(r.author_name, r.platform_message_id, r.kind) for r in rows] == [
        ("Bob", "p1", "message"),
        ("Ann", "p2", "summary"),
    ]
    # Each copy names its original, so an edit made while the compaction ran reaches it; the
    # merged one also keeps the original's count, to replace only the member's share of it.
    assert [(r.copy_of, r.copied_tokens) for r in rows] == [(1, None), (2, 5)]
