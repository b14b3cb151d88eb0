"""Secrets: tokens and keys never reach logs, summaries, command output or chat notices."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from compactbot.adapters.telegram import TelegramPlatform
from compactbot.compression.redact import REDACTED
from tests.fakes.openai_server import Behaviour, Error, FakeOpenAI, Reply
from tests.fakes.telegram_server import FakeTelegram, SentMessage
from tests.harness import make_config, running_app

pytestmark = pytest.mark.filterwarnings("ignore::telegram.warnings.PTBDeprecationWarning")

OPENAI_KEY = "sk-proj-OPENAIsecretKEY0123456789abcdefXYZ"
TELEGRAM_TOKEN = "987654321:AAHsecretTelegramTokenValue_0123456789"
DISCORD_TOKEN = "MTIzNDU2Nzg5MDEyMzQ1Njc4OQ.GsEcRt.discordSecretTokenValue0123456789ab"
WEBHOOK_SECRET = "webhookSECRETvalue_987-zz"
USER_PASTED_KEY = "sk-proj-USERpastedKEYabcdefghijklmnop0123456789"
SECRETS = {
    "OPENAI_API_KEY": OPENAI_KEY,
    "TELEGRAM_BOT_TOKEN": TELEGRAM_TOKEN,
    "DISCORD_BOT_TOKEN": DISCORD_TOKEN,
    "TELEGRAM_WEBHOOK_SECRET": WEBHOOK_SECRET,
}
GROUP = -1001
FAKE_SERVER_ACCESS_LOGGER = "aiohttp.access"
ADMIN_ID = 7
WAIT_SECONDS = 10
FILLER = "we went over the staging outage, the lunch rota and the flaky tests again " * 4


def respond(body: dict[str, Any]) -> Behaviour:
    """Replies fail with an error that echoes the key (as some providers do); summaries come
    from a "leaky" summarizer that copies every line it was sent that mentions a key."""
    if "tools" in body:
        return Error.openai(401, "invalid_api_key", f"Incorrect API key provided: {OPENAI_KEY}")
    sent = "\n".join(str(m.get("content")) for m in body["messages"])
    facts = [line[:200] for line in sent.splitlines() if "key" in line.lower()]
    return Reply("## Key facts and exact values\n" + "\n".join(f"- {f}" for f in facts))


def everything_logged(caplog: pytest.LogCaptureFixture) -> str:
    """Every record of the bot's process at DEBUG, with arguments and tracebacks; the fake
    servers' own access logs are the platform's side of the wire and are left out."""
    formatter = logging.Formatter()
    return "\n".join(
        formatter.format(record) + str(record.__dict__)
        for record in caplog.records
        if record.name != FAKE_SERVER_ACCESS_LOGGER
    )


async def next_sent(tg: FakeTelegram) -> SentMessage:
    return await asyncio.wait_for(tg.sent.get(), WAIT_SECONDS)


@pytest.fixture
def restore_library_log_levels() -> Any:
    """The Telegram adapter raises httpx's level; later tests get the old one back."""
    names = ("httpx", "telegram", "telegram.ext.AIORateLimiter")
    saved = {name: logging.getLogger(name).level for name in names}
    yield
    for name, level in saved.items():
        logging.getLogger(name).setLevel(level)


async def test_secrets_never_reach_logs_chat_output_or_summaries(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    restore_library_log_levels: None,
) -> None:
    caplog.set_level(logging.DEBUG)
    async with FakeOpenAI(respond) as llm, FakeTelegram(token=TELEGRAM_TOKEN) as tg:
        env = {
            **SECRETS,
            "OPENAI_BASE_URL": llm.base_url,
            "COMPACTBOT_MODEL": "fake-model",
            "COMPACTBOT_CONTEXT_LENGTH": "32000",
            "TELEGRAM_API_BASE_URL": tg.base_url,
        }
        config = make_config(tmp_path, env)
        tg.set_chat_member(GROUP, ADMIN_ID, "administrator")
        async with running_app(config) as app:
            chat = f"telegram:{GROUP}"
            await app.services.store.set_chat_setting(chat, "protect_last_n", "5")
            platform = TelegramPlatform(config, app.gateway)
            await platform.start()
            try:
                tg.push_update(tg.group_message("hello there", mention_bot=True))
                failure = await next_sent(tg)
                for i in range(12):
                    text = f"note {i}: {FILLER}"
                    if i == 4:
                        text = f"the new deploy key is {USER_PASTED_KEY} keep it safe"
                    tg.push_update(tg.group_message(text, user_id=2 + i % 3, first_name="Bob"))
                for command in ("/compress@compact_bot --show", "/status", "/config"):
                    tg.push_update(tg.group_message(command, user_id=ADMIN_ID))
                outputs = [await next_sent(tg) for _ in range(4)]
                await app.gateway.join()
                summaries = [
                    r.text
                    for r in await app.services.store.load_active(
                        (await app.services.store.active_session(chat)).id
                    )
                    if r.kind == "summary"
                ]
            finally:
                await platform.stop()

    assert "couldn't" in failure.text or "can't" in failure.text
    # /compress reports when its background compaction commits, maybe after /status answered.
    assert any(o.text.startswith("🗜️ Compressed") for o in outputs)
    assert len(summaries) == 1 and REDACTED in summaries[0]
    assert USER_PASTED_KEY not in summaries[0]
    assert not any(USER_PASTED_KEY in str(body) for body in llm.completions if "tools" not in body)
    chat_output = "\n".join(m.text for m in tg.sent_log)
    logged = everything_logged(caplog)
    assert logged and chat_output
    for name, secret in SECRETS.items():
        for where, text in (("logs", logged), ("chat", chat_output), ("summary", summaries[0])):
            assert secret not in text, f"{name} leaked into {where}"
