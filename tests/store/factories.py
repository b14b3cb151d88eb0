"""Small builders of store inputs shared by the store tests."""

from __future__ import annotations

from compactbot.bot.store import NewMessage


def user(text: str, tokens: int = 5, *, author: str = "alice") -> NewMessage:
    return NewMessage(
        role="user",
        content=f"[{author}] {text}",
        tokens=tokens,
        author_id=author,
        author_name=author,
    )


def assistant(text: str, tokens: int = 5) -> NewMessage:
    return NewMessage(role="assistant", content=text, tokens=tokens)


def summary(text: str, tokens: int = 20) -> NewMessage:
    return NewMessage(role="user", content=text, tokens=tokens, kind="summary")
