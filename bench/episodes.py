"""Text nobody on the team wrote: the GateMem education episodes (Ren et al., 2026; CC-BY-4.0)
replayed as group chats through the real service on a small window, so they compact many times.

At each `utility` checkpoint the asker puts the question to the bot. A scripted model records
the request it gets before any tool call, calls `search_history` once with the question, and
records the request that carries the result. Each is scored by whether it holds every `include`
string (case and spacing normalised), against the newest messages of the chat that fit as many
tokens. Values the chat asked to delete or that were replaced (`leak_targets` of the safety
checkpoints already passed) are counted where they appear, not scored.
"""

from __future__ import annotations

import datetime as dt
import json
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.probes import message_text, normalised
from bench.service import Adapter, inbound, running_service
from bench.shared_files import shared_path
from bench.truncation import newest_that_fit
from compactbot.bot.llm.client import LLMResponse, ToolCall
from compactbot.bot.llm.errors import ContextOverflowError
from compactbot.compression import SUMMARY_PREFIX
from compactbot.compression.tokens import counter_for

DATASET = "datasets/gatemem-education"
WINDOW_TOKENS = 4_096
TURN_GAP_SECONDS = 180.0  # for turns without a timestamp
ANSWER = "Noted — I'll keep that in mind."
QUICK_EPISODE_STRIDE = 8  # --quick replays every 8th episode


@dataclass(frozen=True, slots=True)
class Checkpoint:
    id: str
    turn: str
    asker: str  # principal id
    kind: str  # utility | privacy | safety
    question: str
    include: tuple[str, ...]
    leak_targets: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Episode:
    id: str
    names: Mapping[str, str]  # principal id -> display name
    turns: tuple[Mapping[str, Any], ...]
    checkpoints: tuple[Checkpoint, ...]


@dataclass(frozen=True, slots=True)
class Score:
    checkpoint: str
    before_tool: bool
    after_search: bool
    truncation: bool
    context_tokens: int
    leaks_context: int  # deleted or replaced values in the context before any tool call
    leaks_summary: int  # … of them inside the rendered summary
    leaks_truncation: int
    leak_targets: int


@dataclass(slots=True)
class Replay:
    episode: str
    turns: int
    scores: list[Score] = field(default_factory=list)
    compactions: int = 0
    largest_request: int = 0
    overflows: int = 0  # requests the fake model refused for exceeding the window


def load(stride: int = 1) -> list[Episode] | None:
    """The episodes with their checkpoints, or None when the dataset is not beside us."""
    root = shared_path(DATASET)
    if root is None:
        return None
    checkpoints: dict[str, list[Checkpoint]] = {}
    with open(root / "checkpoints.jsonl", encoding="utf-8") as lines:
        for line in lines:
            raw = json.loads(line)
            checkpoints.setdefault(raw["episode_id"], []).append(
                Checkpoint(
                    id=raw["checkpoint_id"],
                    turn=raw["as_of_turn_id"],
                    asker=raw["asker"]["principal_id"],
                    kind=raw["query_type"],
                    question=raw["query_text"],
                    include=tuple(raw["judge_spec"].get("include") or ()),
                    leak_targets=tuple(raw.get("leak_targets") or ()),
                )
            )
    episodes = []
    with open(root / "episodes.jsonl", encoding="utf-8") as lines:
        for line in lines:
            raw = json.loads(line)
            names = {
                p["principal_id"]: p.get("display_name") or p["principal_id"]
                for p in raw["entities"]["principals"]
            }
            episodes.append(
                Episode(
                    raw["episode_id"],
                    names,
                    tuple(raw["turns"]),
                    tuple(checkpoints.get(raw["episode_id"], ())),
                )
            )
    return episodes[::stride]


class EpisodeLLM:
    """A model that refuses requests over the window (as a provider does) and, for the question
    it is told to expect, searches once and records both requests."""

    model = "bench-episodes"
    offline = True  # no summary model: compactions use the built-in extractor

    def __init__(self, window: int) -> None:
        self._window = window
        self._counter = counter_for(None)
        self.expecting = False
        self.question = ""
        self.before: list[dict[str, Any]] | None = None
        self.after: list[dict[str, Any]] | None = None
        self.largest = 0
        self.overflows = 0
        self._calls = 0

    def expect(self, question: str) -> None:
        self.expecting, self.question, self.before, self.after = True, question, None, None

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        model: str | None = None,
    ) -> LLMResponse:
        tokens = self._counter.count_messages(messages)
        tokens += self._counter.count_tools(tools) if tools else 0
        self.largest = max(self.largest, tokens)
        if tokens > self._window:
            self.overflows += 1
            raise ContextOverflowError(f"{tokens} tokens > {self._window}")
        self._calls += 1
        copied = json.loads(json.dumps(messages, default=str))
        if self.expecting and self.before is None:
            self.before = copied
            arguments = json.dumps({"query": self.question})
            call = ToolCall(f"call_{self._calls}", "search_history", arguments)
            return LLMResponse(None, (call,), tokens, 20, self.model)
        if self.expecting and self.after is None:
            self.after = copied
            self.expecting = False
        return LLMResponse(ANSWER, (), tokens, 12, self.model)


def scored_text(messages: Sequence[Mapping[str, Any]], question: str) -> str:
    """The messages' text, case and spacing normalised, without the question's own words
    (its message, and the search call and result that echo it, are no answer)."""
    text = normalised("\n".join(message_text(m) for m in messages))
    return text.replace(normalised(question), " ") if question else text


def holds(messages: Sequence[Mapping[str, Any]], strings: Sequence[str], question: str) -> bool:
    """Every string is in the messages' text (GateMem's rule: substring after normalising)."""
    text = scored_text(messages, question)
    return all(normalised(s) in text for s in strings)


def found(messages: Sequence[Mapping[str, Any]], strings: Sequence[str], question: str) -> int:
    text = scored_text(messages, question)
    return sum(normalised(s) in text for s in strings)


def _at(turn: Mapping[str, Any], previous: float) -> float:
    stamp = turn.get("timestamp")
    if stamp:
        return dt.datetime.fromisoformat(stamp).replace(tzinfo=dt.UTC).timestamp()
    return previous + TURN_GAP_SECONDS


async def replay(episode: Episode, directory: Path, window: int = WINDOW_TOKENS) -> Replay:
    llm = EpisodeLLM(window)
    adapter = Adapter()
    counter = counter_for(None)
    now = [dt.datetime(2026, 4, 1, tzinfo=dt.UTC).timestamp()]
    chat = "ep"
    log: list[dict[str, Any]] = []  # what the chat holds, as the model reads it
    by_turn: dict[str, list[Checkpoint]] = {}
    for checkpoint in episode.checkpoints:
        by_turn.setdefault(checkpoint.turn, []).append(checkpoint)
    passed: list[Checkpoint] = []
    result = Replay(episode.id, len(episode.turns))
    async with running_service(directory, context_length=window, llm=llm, clock=lambda: now[0]) as (
        app,
        _endpoint,
    ):
        gateway = app.gateway
        for turn in episode.turns:
            now[0] = max(now[0] + 1.0, _at(turn, now[0]))
            speaker = turn["speaker"]["principal_id"]
            name = episode.names.get(speaker, speaker)
            message = inbound(chat, name, turn["text"], turn["turn_id"], addressed=False)
            await gateway.handle(message, adapter)
            await gateway.join()
            log.append({"role": "user", "content": f"[{name}] {turn['text']}"})
            for checkpoint in by_turn.get(turn["turn_id"], ()):
                if checkpoint.kind == "safety":
                    passed.append(checkpoint)
                if checkpoint.kind != "utility":
                    continue
                now[0] += 30.0
                result.scores.append(
                    await _ask(app, adapter, llm, checkpoint, episode, log, passed, counter)
                )
        session = await app.services.store.active_session(message.chat_key)
        result.compactions = session.compressor.compression_count
    result.largest_request = llm.largest
    result.overflows = llm.overflows
    return result


async def _ask(
    app: Any,
    adapter: Adapter,
    llm: EpisodeLLM,
    checkpoint: Checkpoint,
    episode: Episode,
    log: list[dict[str, Any]],
    passed: Sequence[Checkpoint],
    counter: Any,
) -> Score:
    index_pending = getattr(app.services.store, "index_pending", None)
    if index_pending is not None:
        await index_pending()  # a real chat's pauses let the search index catch up
    name = episode.names.get(checkpoint.asker, checkpoint.asker)
    llm.expect(checkpoint.question)
    asked = inbound("ep", name, checkpoint.question, checkpoint.id, addressed=True)
    await app.gateway.handle(asked, adapter)
    await app.gateway.join()
    before, after, question = llm.before or [], llm.after or [], checkpoint.question
    body = [m for m in before if m.get("role") != "system" and question not in message_text(m)]
    budget = counter.count_messages(body)
    counts = [counter.count_message(m) for m in log]
    newest = log[len(log) - newest_that_fit([{"role": "system"}, *log], [0, *counts], budget) :]
    targets = tuple(dict.fromkeys(t for c in passed for t in c.leak_targets))
    summary = [m for m in before if SUMMARY_PREFIX in message_text(m)]
    log.append({"role": "user", "content": f"[{name}] {checkpoint.question}"})
    log.append({"role": "assistant", "content": ANSWER})
    return Score(
        checkpoint=checkpoint.id,
        before_tool=llm.before is not None and holds(before, checkpoint.include, question),
        after_search=llm.after is not None and holds(after, checkpoint.include, question),
        truncation=holds(newest, checkpoint.include, question),
        context_tokens=budget,
        leaks_context=found(before, targets, question),
        leaks_summary=found(summary, targets, question),
        leaks_truncation=found(newest, targets, question),
        leak_targets=len(targets),
    )


async def measure(quick: bool) -> list[Replay] | None:
    episodes = load(QUICK_EPISODE_STRIDE if quick else 1)
    if episodes is None:
        return None
    out = []
    with tempfile.TemporaryDirectory(prefix="bench-episodes-") as tmp:
        for number, episode in enumerate(episodes):
            directory = Path(tmp) / f"e{number}"
            directory.mkdir()
            out.append(await replay(episode, directory))
    return out
