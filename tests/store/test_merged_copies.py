"""How an edit or a delete rewrites a copy that carries a merged summary (pure, no store)."""

from __future__ import annotations

import json

from compactbot.bot.store.merged_copies import member_row, merged_rewrite
from compactbot.compression.template import merge_into, unwrap_merged, wrap_summary

SUMMARY = wrap_summary("- the budget cap is 40k")


def test_a_plain_copy_is_not_rewritten() -> None:
    assert merged_rewrite("[alice] hi", "text", "[alice] hello") is None
    assert merged_rewrite(None, "null", "[alice] hello") is None


def test_an_image_message_with_a_merged_summary_part_keeps_that_part() -> None:
    parts = [
        {"type": "text", "text": "[alice] look"},
        {"type": "image_url", "image_url": {"url": "data:,"}},
        {"type": "text", "text": merge_into("", SUMMARY)},
    ]
    edited = merged_rewrite(json.dumps(parts), "json", "[alice] look again")
    assert edited is not None and edited.content_format == "json"
    assert json.loads(edited.text) == [{"type": "text", "text": "[alice] look again"}, parts[-1]]
    deleted = merged_rewrite(json.dumps(parts), "json", None)
    assert deleted is not None and deleted.content_format == "text"
    assert "budget cap" in deleted.text and unwrap_merged(deleted.text) is None


def test_the_member_row_is_the_newest_copy_without_a_summary() -> None:
    rows = [
        {"id": 1, "content": "[alice] hi", "content_format": "text"},
        {"id": 2, "content": merge_into("[alice] hi", SUMMARY), "content_format": "text"},
    ]
    assert member_row(rows)["id"] == 1
