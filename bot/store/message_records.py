"""The transcript rows that cross the storage seam: as written, and as read back."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, Literal

from compactbot.compression.message_hints import message_hints, states_rule

MessageKind = Literal["message", "summary", "note"]


def openai_form(
    role: str,
    content: Any,
    tool_calls: list[dict[str, Any]] | None,
    tool_call_id: str | None,
    name: str | None,
) -> dict[str, Any]:
    """The wire-format dict of a stored row (no storage fields)."""
    out: dict[str, Any] = {"role": role, "content": content}
    if tool_calls:
        out["tool_calls"] = tool_calls
    if tool_call_id is not None:
        out["tool_call_id"] = tool_call_id
    if name is not None and role == "tool":
        out["name"] = name
    return out


@dataclass(frozen=True, slots=True)
class NewMessage:
    role: str
    content: Any
    tokens: int
    author_id: str | None = None
    author_name: str | None = None
    # Whether the author was a chat admin when writing it; None: not known (SPEC 16).
    author_admin: bool | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    platform_message_id: str | None = None
    kind: MessageKind = "message"
    created_at: float | None = None
    # message_hints() of the row as it is read back; None: the store computes them as it writes
    # the row (on SQLite's writer thread, off the event loop that parses the next message).
    hints: int | None = None
    # The stored row this one copies (a compaction's kept tail): at the commit the copy takes
    # that row's text as it is then, so an edit made meanwhile is not undone.
    copy_of: int | None = None
    # Set when a summary is merged into the copy: the row's count when copied, so such an edit
    # replaces only the member's part (and share of the count).
    copied_tokens: int | None = None

    @classmethod
    def from_openai(
        cls, message: dict[str, Any], tokens: int, *, kind: MessageKind = "message", **extra: Any
    ) -> NewMessage:
        """The row for `message`; its hints are those `extra` carries, or computed when stored."""
        return cls(
            role=message["role"],
            content=message.get("content"),
            tokens=tokens,
            tool_calls=message.get("tool_calls"),
            tool_call_id=message.get("tool_call_id"),
            name=message.get("name"),
            kind=kind,
            **extra,
        )

    def to_openai(self) -> dict[str, Any]:
        return openai_form(self.role, self.content, self.tool_calls, self.tool_call_id, self.name)

    def stored_hints(self) -> int:
        """The hints to store: those given, else message_hints() of the form read back (an
        empty tool_calls list, say, is not read back)."""
        return self.hints if self.hints is not None else message_hints(self.to_openai())

    def analysed(self) -> NewMessage:
        """The row with its hints made, as they will be stored (once: the store reads them)."""
        return self if self.hints is not None else replace(self, hints=self.stored_hints())

    @property
    def states_rule(self) -> bool:
        """Whether its analysis read a chat rule in it (False until `analysed`)."""
        return self.hints is not None and states_rule(self.hints)


@dataclass(frozen=True, slots=True)
class StoredMessage:
    id: int
    session_id: int
    role: str
    content: Any
    tokens: int
    created_at: float
    active: bool
    compacted: bool
    kind: MessageKind
    author_id: str | None = None
    author_name: str | None = None
    author_admin: bool | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    platform_message_id: str | None = None
    hints: int | None = None  # as NewMessage.hints; NULL on rows stored before migration 11

    def to_openai(self) -> dict[str, Any]:
        """The wire-format dict the model sees (no storage fields)."""
        return openai_form(self.role, self.content, self.tool_calls, self.tool_call_id, self.name)

    @property
    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        if self.content is None:
            return ""
        return json.dumps(self.content, ensure_ascii=False)
