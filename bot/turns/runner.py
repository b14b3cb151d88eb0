"""One agent turn: preflight compaction, the model and tool loop, overflow recovery."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from compactbot.bot.compaction.session_compactor import SessionCompactor
from compactbot.bot.llm.client import LLMClient, LLMResponse
from compactbot.bot.llm.errors import ContextOverflowError, LLMError
from compactbot.bot.llm.metering import BudgetExhausted, budget_notice, spending_for
from compactbot.bot.llm.stream import TextSink, complete_maybe_streaming
from compactbot.bot.store.base import NewMessage, SessionRecord, StoredMessage, TurnFence
from compactbot.bot.store.protocols.transcript_store import TranscriptWrites
from compactbot.bot.turns.tools import TOOL_SCHEMAS, ToolContext, ToolStore, run_tool
from compactbot.bot.turns.working_set import ActiveTranscript, WorkingSet
from compactbot.compression import CompressorConfig, ContextCompressor
from compactbot.compression.hygiene import needs_room
from compactbot.compression.tokens import TokenCounter

log = logging.getLogger(__name__)

# Hermes caps compaction attempts per turn at 3; every trigger path shares the budget.
MAX_COMPACTIONS_PER_TURN = 3
PREFLIGHT_PASSES = 3
# A pass that leaves >= 95 % of the tokens and the same message count made no progress.
PROGRESS_TOKEN_RATIO = 0.95
MAX_TOOL_ROUNDS = 6

BREAKER_NOTICE = (
    "⏸ Automatic compaction is paused for a few minutes: the last compactions did not bring "
    "the context under the limit. Admins can run /compress or /new."
)

EMPTY_REPLY_TEXT = "The model returned an empty answer. Your message is saved; please ask again."

SystemPromptSource = Callable[[str], Awaitable[str]]


@dataclass(frozen=True, slots=True)
class TurnRequest:
    session_id: int
    chat_key: str
    anchor_id: int  # the stored user message this turn answers
    author_id: str | None
    author_name: str | None
    can_remember: bool
    settings: CompressorConfig
    compression_enabled: bool = True
    # How long the turn waits for another path's compaction before answering without it.
    compaction_wait_seconds: float = 10.0
    # The anchor's platform id: a compaction by another path copies the row under a new id.
    anchor_platform_id: str | None = None
    # A durable turn's claim (worker mode): every write of the turn checks it still holds.
    fence: TurnFence | None = None
    on_text: TextSink | None = None  # streams the answer as it is written
    model: str | None = None  # the chat's own model (/config model); None: the default


@dataclass(frozen=True, slots=True)
class TurnResult:
    reply: str | None
    notices: tuple[str, ...] = ()
    compactions: int = 0
    error: str | None = None  # why no reply could be produced, for the chat


@dataclass(slots=True)
class _Turn:
    request: TurnRequest
    compressor: ContextCompressor
    anchor_id: int = 0
    version: int = -1  # the session version the loaded transcript belongs to
    own_ids: list[int] = field(default_factory=list)
    attempts: int = 0
    notices: list[str] = field(default_factory=list)
    messages: list[dict] = field(default_factory=list)
    tokens: int = 0
    # The question as archived, once a compaction summarised it away before it was answered.
    archived_anchor: StoredMessage | None = None


class TurnStore(ToolStore, TranscriptWrites, Protocol):
    """What a turn uses: its tools' store, the session's state, and appends of what it says."""


class AgentRunner:
    """Answers one addressed message; everything it produces is stored as it happens."""

    def __init__(
        self,
        store: TurnStore,
        llm: LLMClient,
        compactor: SessionCompactor,
        counter: TokenCounter,
        system_prompt_for: SystemPromptSource,
        working_set: WorkingSet | None = None,
    ) -> None:
        self._working_set = working_set or WorkingSet(store)  # speed (#17): SPEC 8
        self._store = store
        self._llm = llm
        self._compactor = compactor
        self._counter = counter
        self._system_prompt_for = system_prompt_for
        self._tool_tokens = counter.count_tools(TOOL_SCHEMAS)

    async def run_turn(self, request: TurnRequest) -> TurnResult:
        session = await self._store.get_session(request.session_id)
        if session.system_prompt is None:
            prompt = await self._system_prompt_for(request.chat_key)
            await self._store.set_system_prompt(session.id, prompt)
        turn = _Turn(
            request, self._compactor.build_compressor(request.settings, session.compressor)
        )
        turn.anchor_id = request.anchor_id
        # Every model call of the turn, tool rounds included, is charged to the asker.
        with spending_for(request.chat_key, request.author_id, "reply"):
            return await self._run(turn, session)

    async def _run(self, turn: _Turn, session: SessionRecord) -> TurnResult:
        # The record just read serves the first load, unless the prompt was written since.
        await self._load(turn, session if session.system_prompt is not None else None)
        await self._preflight(turn)
        for round_no in range(MAX_TOOL_ROUNDS + 1):
            if round_no and self._may_compact(turn) and self._wants_compaction(turn):
                await self._compact(turn, "pressure", force=self._needs_room(turn))
            tools = TOOL_SCHEMAS if round_no < MAX_TOOL_ROUNDS else None
            try:
                response = await self._complete_with_recovery(turn, tools)
            except _TurnFailed as failed:
                return self._result(turn, None, failed.message)
            except LLMError as exc:
                log.warning("model call failed: %s", type(exc).__name__)
                return self._result(turn, None, _llm_failure_text(exc))
            if not response.tool_calls:
                if not (response.content or "").strip():
                    # Posting "…" for an empty answer tells the asker nothing (issue 13).
                    return self._result(turn, None, EMPTY_REPLY_TEXT)
                return self._result(turn, response.content or "", None)
            await self._store_tool_round(turn, response)
            await self._load(turn)
            if self._may_compact(turn) and turn.compressor.should_compress():
                await self._compact(turn, "post_response")
        return self._result(turn, None, "I could not finish this answer; please ask again.")

    async def _complete_with_recovery(self, turn: _Turn, tools: list[dict] | None) -> LLMResponse:
        while True:
            try:
                response = await complete_maybe_streaming(
                    self._llm,
                    turn.messages,
                    tools=tools,
                    on_text=turn.request.on_text,
                    model=turn.request.model,
                )
            except ContextOverflowError:
                if not turn.request.compression_enabled:
                    raise _TurnFailed(
                        "This conversation is too long for the model and compression is off "
                        "here. An admin can run /new to start over."
                    ) from None
                if turn.attempts >= MAX_COMPACTIONS_PER_TURN:
                    raise _TurnFailed(
                        "This conversation is still too long for the model after "
                        f"{MAX_COMPACTIONS_PER_TURN} compactions. An admin can run /new."
                    ) from None
                if not await self._compact(turn, "overflow", force=True):
                    raise _TurnFailed(
                        "This conversation is too long for the model and I could not "
                        "compress it further. An admin can run /new."
                    ) from None
                continue
            await self._record_prompt_tokens(turn, response.prompt_tokens)
            return response

    async def _record_prompt_tokens(self, turn: _Turn, prompt_tokens: int) -> None:
        """A delta checked against the version the prompt was built from, never a snapshot."""
        tripped: list[bool] = []
        delta = self._compactor.prompt_tokens_delta(turn.request.settings, prompt_tokens, tripped)
        state = await self._store.apply_state_delta(
            turn.request.session_id, turn.version, delta, fence=turn.request.fence
        )
        if state is None:
            return  # a compaction committed meanwhile: the count describes an older transcript
        turn.compressor = self._compactor.build_compressor(turn.request.settings, state)
        if any(tripped):
            turn.notices.append(BREAKER_NOTICE)
            self._compactor.metrics.breaker_paused()

    async def _preflight(self, turn: _Turn) -> None:
        for _ in range(PREFLIGHT_PASSES):
            if not self._may_compact(turn) or not self._wants_compaction(turn):
                return
            before_count, before_tokens = len(turn.messages), turn.tokens
            if not await self._compact(turn, "preflight", force=self._needs_room(turn)):
                return
            progressed = len(turn.messages) < before_count or (
                turn.tokens < PROGRESS_TOKEN_RATIO * before_tokens
            )
            if not progressed:
                return

    def _wants_compaction(self, turn: _Turn) -> bool:
        return turn.compressor.should_compress(turn.tokens) or self._needs_room(turn)

    def _needs_room(self, turn: _Turn) -> bool:
        """The request would not fit the window: compact even while the breaker pauses."""
        settings = turn.request.settings
        return needs_room(
            tokens=turn.tokens,
            context_length=settings.context_length,
            max_tokens=settings.max_tokens,
        )

    def _may_compact(self, turn: _Turn) -> bool:
        return turn.request.compression_enabled and turn.attempts < MAX_COMPACTIONS_PER_TURN

    async def _compact(self, turn: _Turn, trigger: str, *, force: bool = False) -> bool:
        """Compact, or wait for the compaction already in flight; True if the transcript changed."""
        session_id = turn.request.session_id
        version = turn.version
        leases = self._compactor.leases
        if leases.in_flight(session_id):
            idle = await self._wait_for_compaction(turn)
            if turn.version != version:
                return True
            if not idle:
                return False  # the deadline passed: answer from the current transcript
        turn.attempts += 1
        report = await self._compactor.compact(
            session_id,
            trigger=trigger,
            settings=turn.request.settings,
            system_prompt=await self._system_prompt_for(turn.request.chat_key),
            force=force,
            upto_id=turn.anchor_id,
            # Overflow, or a request that would not fit: it cannot wait for a rate-limited summary.
            urgent=force,
        )
        if report.outcome == "locked":
            # Another path (hygiene, overnight, the CLI) holds the lease: its result is ours.
            await self._wait_for_compaction(turn)
            return turn.version != version
        if report.notice:
            turn.notices.append(report.notice)
        if report.new_anchor_id is not None:
            turn.anchor_id = report.new_anchor_id
        await self._load(turn)
        return report.changed

    async def _wait_for_compaction(self, turn: _Turn) -> bool:
        leases = self._compactor.leases
        idle = await leases.wait_idle(turn.request.session_id, turn.request.compaction_wait_seconds)
        if not idle:
            log.warning(
                "compaction still running after %.0fs; answering from the current transcript "
                "(chat=%s session=%d)",
                turn.request.compaction_wait_seconds,
                turn.request.chat_key,
                turn.request.session_id,
            )
        await self._load(turn)
        return idle

    async def _load(self, turn: _Turn, session: SessionRecord | None = None) -> None:
        """The request: the transcript up to the anchor, plus this turn's own tool round-trips.

        The compressor is rebuilt from the row each time (read now unless `session` is that
        fresh row), so no state is held across a wait.
        """
        if session is None:
            session = await self._store.get_session(turn.request.session_id)
        active = await self._working_set.active(session)
        turn.anchor_id = _current_anchor(active, turn.anchor_id, turn.request.anchor_platform_id)
        turn.version = session.version
        turn.compressor = self._compactor.build_compressor(
            turn.request.settings, session.compressor
        )
        cut, own = _turn_rows(active, turn.anchor_id, turn.own_ids)
        system = session.system_prompt or ""
        turn.messages = active.request(system, cut, own)
        turn.tokens = (
            self._counter.count_text(system)
            + active.tokens(0, cut)
            + sum(active.row(i).tokens for i in own)
            + self._tool_tokens
        )
        if active.index_of(turn.anchor_id) is None:
            await self._restore_question(turn, cut)

    async def _restore_question(self, turn: _Turn, cut: int) -> None:
        """Put a question a compaction summarised before its turn ran back before its answer.

        A queued turn can wait behind others while hygiene compacts its chat; without this the
        model would answer the newest message instead of the one it was asked.
        """
        if turn.archived_anchor is None:
            found = await self._store.load_messages(turn.request.session_id, [turn.anchor_id])
            if not found:
                return
            turn.archived_anchor = found[0]
        question = turn.archived_anchor
        turn.messages = [*turn.messages[: 1 + cut], question.to_openai(), *turn.messages[1 + cut :]]
        turn.tokens += question.tokens

    async def _store_tool_round(self, turn: _Turn, response: LLMResponse) -> None:
        assistant = response.as_message()
        rows = [NewMessage.from_openai(assistant, self._counter.count_message(assistant))]
        ctx = ToolContext(
            store=self._store,
            chat_key=turn.request.chat_key,
            session_id=turn.request.session_id,
            author_id=turn.request.author_id,
            author_name=turn.request.author_name,
            can_remember=turn.request.can_remember,
            current_message_id=turn.anchor_id,
        )
        for call in response.tool_calls:
            output = await run_tool(call, ctx)
            result = {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": output}
            rows.append(NewMessage.from_openai(result, self._counter.count_message(result)))
        turn.own_ids.extend(
            await self._store.append_messages(
                turn.request.session_id, rows, fence=turn.request.fence
            )
        )

    def _result(self, turn: _Turn, reply: str | None, error: str | None) -> TurnResult:
        return TurnResult(reply, tuple(turn.notices), turn.attempts, error)


class _TurnFailed(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _turn_rows(
    active: ActiveTranscript, anchor_id: int, own_ids: list[int]
) -> tuple[int, list[int]]:
    """Rows [0, cut) and the turn's own rows after them, by index; O(own rows), not O(history)."""
    anchor = active.index_of(anchor_id)
    own_rows = (active.index_of(message_id) for message_id in own_ids)
    if anchor is None:
        # The anchor was compacted by another path (e.g. hygiene, /compress): everything before
        # the turn's own rows, with the archived question put back after it by the caller.
        own = sorted(index for index in own_rows if index is not None)
        return (own[0] if own else active.length), own
    cut = anchor + 1
    return cut, sorted(index for index in own_rows if index is not None and index >= cut)


def _current_anchor(active: ActiveTranscript, anchor_id: int, platform_id: str | None) -> int:
    """The anchor row, or its verbatim copy after another path compacted the original away."""
    if platform_id is None or active.index_of(anchor_id) is not None:
        return anchor_id
    for row in reversed(active.rows):
        if row.role == "user" and row.platform_message_id == platform_id:
            return row.id
    return anchor_id


def _llm_failure_text(exc: LLMError) -> str:
    if isinstance(exc, BudgetExhausted):  # spent during this turn, e.g. between tool rounds
        return budget_notice(exc.exhausted)
    kind = type(exc).__name__
    if kind == "LLMAuthError":
        return (
            "I can't use the language model right now (access or quota problem). "
            "Your message is saved."
        )
    if kind == "LLMRateLimitError":
        return (
            "The language model is rate-limiting me right now. "
            "Your message is saved; try again shortly."
        )
    return "I couldn't reach the language model just now. Your message is saved; try again shortly."
