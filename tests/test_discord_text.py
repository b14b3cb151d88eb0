"""Discord reply text: 2000-unit chunks with intact fences, inert @everyone / @here."""

from __future__ import annotations

from compactbot.adapters.chunking import fences_balanced
from compactbot.adapters.discord_text import discord_chunks, neutralize_mass_mentions


def test_long_reply_splits_under_2000_with_balanced_fences() -> None:
    code = "\n".join(f"let x{i} = {i};" for i in range(300))
    text = "Intro.\n\n```rust\n" + code + "\n```\nOutro."
    chunks = discord_chunks(text)
    assert len(chunks) >= 3
    assert all(len(c) <= 2000 and fences_balanced(c) for c in chunks)
    assert all(c.startswith("```rust\n") for c in chunks[1:])


def test_emoji_counted_conservatively() -> None:
    chunks = discord_chunks("🎉" * 1500)
    assert len(chunks) == 2
    assert all(len(c.encode("utf-16-le")) // 2 <= 2000 for c in chunks)


def test_short_reply_is_unchanged() -> None:
    assert discord_chunks("hi **there**") == ["hi **there**"]


def test_everyone_and_here_get_zero_width_space() -> None:
    out = neutralize_mass_mentions("ping @everyone and @here now")
    assert out == "ping @\u200beveryone and @\u200bhere now"
    assert "@everyone" not in out and "@here" not in out


def test_mentions_inside_code_blocks_are_left_alone() -> None:
    text = "@here\n```\nemail @everyone\n```"
    assert neutralize_mass_mentions(text) == "@\u200bhere\n```\nemail @everyone\n```"


def test_ordinary_mentions_untouched() -> None:
    assert neutralize_mass_mentions("hi @hereford and <@123>") == "hi @hereford and <@123>"
