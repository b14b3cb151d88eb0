"""Build the real service (store, model client, compactor, gateway) for end-to-end tests."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from compactbot.bot.app import App
from compactbot.bot.events import InboundMessage, ReplyTarget
from compactbot.bot.llm.client import LLMClient
from compactbot.bot.settings.config import Config
from compactbot.bot.settings.loading import load_config


def make_config(tmp_path: Path, env: Mapping[str, str] | None = None) -> Config:
    """Config from env-style overrides only (no YAML, no real environment)."""
    base = {"COMPACTBOT_DB": str(tmp_path / "compactbot.db")}
    return load_config({**base, **(env or {})}, path=None)


def endpoint_env(base_url: str, *, context_length: int = 8_000, model: str = "fake-model") -> dict:
    return {
        "OPENAI_BASE_URL": base_url,
        "OPENAI_API_KEY": "sk-test-key-for-fakes",
        "COMPACTBOT_MODEL": model,
        "COMPACTBOT_CONTEXT_LENGTH": str(context_length),
    }


@contextlib.asynccontextmanager
async def running_app(config: Config, *, llm: LLMClient | None = None) -> AsyncIterator[App]:
    async with App(config, llm=llm) as app:
        yield app


@dataclass
class RecordingAdapter:
    """An in-process platform: records what the bot sends; admins by author id."""

    platform: str = "test"
    admins: set[str] = field(default_factory=set)
    sent: list[tuple[ReplyTarget, str]] = field(default_factory=list)
    queue: asyncio.Queue[tuple[ReplyTarget, str]] = field(default_factory=asyncio.Queue)
    fail_sends: int = 0

    async def send(self, target: ReplyTarget, text: str) -> None:
        if self.fail_sends:
            self.fail_sends -= 1
            from compactbot.bot.events import DeliveryError

            raise DeliveryError("platform refused the message")
        self.sent.append((target, text))
        self.queue.put_nowait((target, text))

    async def is_admin(self, message: InboundMessage) -> bool:
        return message.author_id in self.admins

    def typing(self, target: ReplyTarget) -> contextlib.AbstractAsyncContextManager[None]:
        return contextlib.nullcontext()

    def texts(self, chat_id: str | None = None) -> list[str]:
        return [text for target, text in self.sent if chat_id is None or target.chat_id == chat_id]


_update_counter = 0


def group_message(
    text: str,
    *,
    author: str = "Alice",
    chat_id: str = "g1",
    addressed: bool = True,
    platform: str = "test",
    thread_id: str | None = None,
    update_id: str | None = None,
    is_group: bool = True,
) -> InboundMessage:
    global _update_counter
    _update_counter += 1
    return InboundMessage(
        platform=platform,
        chat_id=chat_id,
        author_id=author.lower(),
        author_name=author,
        text=text,
        addressed=addressed,
        is_group=is_group,
        thread_id=thread_id,
        platform_message_id=str(_update_counter),
        update_id=update_id,
    )
