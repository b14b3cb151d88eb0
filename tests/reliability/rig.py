"""Shared parts of the reliability tests: YAML configs, an in-process LLM, transcript checks."""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from compactbot.bot.llm.client import LLMResponse
from compactbot.bot.settings.config import Config
from compactbot.bot.store.backends import Store
from compactbot.bot.store.base import StoredMessage
from compactbot.compression.tokens import counter_for
from tests.harness import make_config

MARKER = re.compile(r"<<(m[\w-]+)>>")


def yaml_config(
    tmp_path: Path, sections: Mapping[str, Any], env: Mapping[str, str] | None = None
) -> Config:
    """Config from a real YAML file named by COMPACTBOT_CONFIG, plus env-style overrides."""
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(dict(sections)), encoding="utf-8")
    return make_config(tmp_path, {"COMPACTBOT_CONFIG": str(path), **(env or {})})


def marker_of(text: str) -> str | None:
    """The `<<m...>>` tag a test planted in a message, so replies can name what they answer."""
    found = MARKER.findall(text)
    return found[-1] if found else None


@dataclass
class EchoLLM:
    """An in-process `bot.llm.LLMClient`: random latency, replies naming the message answered."""

    model: str = "fake-model"
    offline: bool = False
    latency_seconds: tuple[float, float] = (0.0, 0.0)
    seed: int = 0
    requests: list[list[dict[str, Any]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)
        self._counter = counter_for(None)

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        model: str | None = None,
    ) -> LLMResponse:
        self.requests.append([dict(m) for m in messages])
        low, high = self.latency_seconds
        if high:
            await asyncio.sleep(self._rng.uniform(low, high))
        last = messages[-1] if messages else {}
        tag = marker_of(str(last.get("content") or "")) or "none"
        text = f"reply for <<{tag}>>"
        prompt = self._counter.count_messages(messages) + self._counter.count_tools(tools or ())
        return LLMResponse(text, (), prompt, self._counter.count_text(text), self.model)


def originals(rows: Sequence[StoredMessage]) -> dict[str, StoredMessage]:
    """The first row per platform message id: compaction copies keep the id, get a later row."""
    first: dict[str, StoredMessage] = {}
    for row in sorted(rows, key=lambda r: r.id):
        if row.platform_message_id is not None:
            first.setdefault(row.platform_message_id, row)
    return first


async def assert_totals_match_recount(store: Store, session_ids: Sequence[int]) -> None:
    for session_id in session_ids:
        session = await store.get_session(session_id)
        assert (session.active_tokens, session.active_messages) == await store.recount(
            session_id
        ), f"running totals drifted in session {session_id}"


async def wait_until(predicate: Callable[[], bool], limit_seconds: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit_seconds
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.01)
