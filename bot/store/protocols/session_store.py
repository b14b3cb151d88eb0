"""The storage protocol of sessions: each chat's current and ended ones, their running totals
and compressor state (SPEC 4)."""

from __future__ import annotations

from typing import Protocol

from compactbot.bot.store.base import SessionRecord, StateDelta, TurnFence
from compactbot.compression.state import CompressorState


class SessionStore(Protocol):
    """Sessions: opened and ended, their state written as version-checked deltas."""

    async def active_session(self, chat_key: str, scope_user: str | None = None) -> SessionRecord:
        """The chat's open session, created when there is none."""
        ...

    async def get_session(self, session_id: int) -> SessionRecord: ...
    async def new_session(self, chat_key: str, scope_user: str | None = None) -> SessionRecord:
        """End the open session (if any) and start another."""
        ...

    async def list_sessions(self, chat_key: str | None = None) -> list[SessionRecord]: ...
    async def save_compressor_state(self, session_id: int, state: CompressorState) -> None:
        """Overwrite the state (operator tools and tests only; the service writes deltas)."""
        ...

    async def apply_state_delta(
        self,
        session_id: int,
        expected_version: int,
        delta: StateDelta,
        *,
        fence: TurnFence | None = None,
    ) -> CompressorState | None:
        """Apply `delta` to the stored state if the session is still at `expected_version`.

        Returns the new state, or None (nothing written) when a compaction committed since.
        A `fence` (durable turns, PostgreSQL only) raises TurnLost once it is stale.
        """
        ...

    async def set_system_prompt(self, session_id: int, prompt: str | None) -> None: ...
    async def recount(self, session_id: int) -> tuple[int, int]:
        """(tokens, messages) of the active rows, recomputed from scratch."""
        ...
