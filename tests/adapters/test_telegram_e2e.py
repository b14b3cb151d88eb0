"""The Telegram platform end to end: real PTB and a real App against FakeTelegram + FakeOpenAI."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from compactbot.adapters.chunking import utf16_len
from compactbot.adapters.telegram import TelegramPlatform, TelegramStartError
from compactbot.adapters.telegram_html import html_to_plain, render_chunks
from compactbot.bot.app import App
from tests.fakes.fixtures import fake_telegram, free_port  # noqa: F401  (pytest fixtures)
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.fakes.telegram_server import FakeTelegram, SentMessage
from tests.fakes.telegram_wire import post_webhook_update
from tests.harness import endpoint_env, make_config, running_app

# PTB itself warns when it builds a RetryAfter (the int → timedelta change in PTB 23).
pytestmark = pytest.mark.filterwarnings("ignore::telegram.warnings.PTBDeprecationWarning")

WAIT_SECONDS = 5
# Interpreter start plus imports on a shared 2-core machine; the bot itself answers in ms.
SUBPROCESS_REPLY_SECONDS = 30
SIGTERM_EXIT_SECONDS = 10
REPO_ROOT = Path(__file__).resolve().parents[2]
GROUP = -1001
WEBHOOK_SECRET = "s3cret-Token_1"


@dataclass(frozen=True, slots=True)
class Running:
    app: App
    platform: TelegramPlatform
    tg: FakeTelegram
    llm: FakeOpenAI

    async def reply(self) -> SentMessage:
        return await asyncio.wait_for(self.tg.sent.get(), WAIT_SECONDS)

    async def history(self, chat_key: str) -> list[str]:
        rows = await self.app.services.store.load_history(chat_key)
        return [str(row.content) for row in rows]


@pytest.fixture
async def llm() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as fake:
        yield fake


@contextlib.asynccontextmanager
async def serving(
    tmp_path: Path, tg: FakeTelegram, llm: FakeOpenAI, env: Mapping[str, str] | None = None
) -> AsyncIterator[Running]:
    config = make_config(
        tmp_path,
        {
            **endpoint_env(llm.base_url, context_length=32_000),
            "TELEGRAM_BOT_TOKEN": tg.token,
            "TELEGRAM_API_BASE_URL": tg.base_url,
            **(env or {}),
        },
    )
    async with running_app(config) as app:
        platform = TelegramPlatform(config, app.gateway)
        await platform.start()
        try:
            yield Running(app, platform, tg, llm)
        finally:
            await platform.stop()


@pytest.fixture
async def bot(
    tmp_path: Path,
    fake_telegram: FakeTelegram,  # noqa: F811
    llm: FakeOpenAI,
) -> AsyncIterator[Running]:
    async with serving(tmp_path, fake_telegram, llm) as running:
        yield running


async def test_unaddressed_group_message_is_stored_not_answered(bot: Running) -> None:
    tg = bot.tg
    tg.push_update(tg.group_message("we ship on friday"))
    tg.push_update(tg.group_message("when do we ship?", mention_bot=True, first_name="Bob"))
    await bot.reply()
    await bot.app.gateway.join()
    assert len(tg.sent_log) == 1  # only the mention was answered
    assert "[Alice] we ship on friday" in await bot.history(f"telegram:{GROUP}")
    prompt = [m["content"] for m in bot.llm.completions[-1]["messages"]]
    assert "[Alice] we ship on friday" in prompt


async def test_mention_is_answered_as_a_reply_to_it(bot: Running) -> None:
    update = bot.tg.group_message("hello", mention_bot=True)
    bot.tg.push_update(update)
    sent = await bot.reply()
    assert sent.chat_id == GROUP
    assert sent.params["reply_parameters"]["message_id"] == update["message"]["message_id"]


async def test_forum_topic_reply_keeps_message_thread_id(bot: Running) -> None:
    bot.tg.push_update(bot.tg.group_message("hi", mention_bot=True, thread_id=42, is_forum=True))
    sent = await bot.reply()
    assert sent.thread_id == 42
    assert await bot.history(f"telegram:{GROUP}:42")  # the topic is a chat of its own


async def test_typing_action_carries_the_topic_thread_id(bot: Running) -> None:
    bot.tg.push_update(bot.tg.group_message("hi", mention_bot=True, thread_id=42, is_forum=True))
    await bot.reply()
    actions = bot.tg.calls_to("sendChatAction")
    assert actions
    assert actions[0].params["action"] == "typing"
    assert actions[0].params["message_thread_id"] == 42


async def test_compress_from_non_admin_is_refused(bot: Running) -> None:
    bot.tg.set_chat_member(GROUP, 1, "member")
    bot.tg.push_update(bot.tg.group_message("/compress@compact_bot", user_id=1))
    sent = await bot.reply()
    assert "needs chat-admin rights" in sent.text
    assert [c.params["user_id"] for c in bot.tg.calls_to("getChatMember")] == [1]


async def test_compress_from_admin_runs(bot: Running) -> None:
    bot.tg.set_chat_member(GROUP, 1, "administrator")
    bot.tg.push_update(bot.tg.group_message("/compress@compact_bot", user_id=1))
    sent = await bot.reply()
    assert "Compressed" in sent.text or "Nothing to compress" in sent.text


async def test_a_demoted_admin_loses_rights_at_the_member_update(bot: Running) -> None:
    bot.tg.set_chat_member(GROUP, 1, "administrator")
    bot.tg.push_update(bot.tg.group_message("/compress@compact_bot", user_id=1))
    assert "needs chat-admin rights" not in (await bot.reply()).text
    # Within the cache's lifetime only Telegram's member update can tell the bot.
    bot.tg.push_update(bot.tg.member_change(GROUP, 1, "administrator", "member"))
    bot.tg.push_update(bot.tg.group_message("/compress@compact_bot", user_id=1))
    assert "needs chat-admin rights" in (await bot.reply()).text
    assert len(bot.tg.calls_to("getChatMember")) == 1
    polls = bot.tg.calls_to("getUpdates")
    assert "chat_member" in polls[-1].params["allowed_updates"]


async def test_long_reply_is_split_under_limit_with_balanced_code_blocks(bot: Running) -> None:
    code = "\n".join(f"    total += values[{i}]  # step {i}" for i in range(120))
    prose = "\n\n".join(f"Paragraph {i}: " + "words " * 60 for i in range(20))
    text = f"{prose}\n\n```python\n{code}\n```\n\n{prose}"
    assert len(text) > 10_000
    bot.llm.script(Reply(text))
    bot.tg.push_update(bot.tg.group_message("explain", mention_bot=True))
    chunks = [await bot.reply() for _ in render_chunks(text)]
    assert len(chunks) >= 3
    for chunk in chunks:
        assert utf16_len(chunk.text) <= 4096
        assert chunk.parse_mode == "HTML"  # the fake accepted every chunk's HTML as it was
        assert chunk.text.count("<pre>") == chunk.text.count("</pre>")
    plain = "".join(html_to_plain(chunk.text) for chunk in chunks)
    assert "values[119]" in plain and "Paragraph 19" in plain
    assert "reply_parameters" in chunks[0].params
    assert all("reply_parameters" not in chunk.params for chunk in chunks[1:])


async def test_script_tags_and_stray_markers_are_escaped(bot: Running) -> None:
    bot.llm.script(Reply("Try <script>alert(1)</script> and *this_ **bold _x"))
    bot.tg.push_update(bot.tg.group_message("show me", mention_bot=True))
    sent = await bot.reply()
    assert sent.parse_mode == "HTML"
    assert "&lt;script&gt;" in sent.text
    assert "<script>" not in sent.text


async def test_rejected_html_is_resent_as_plain_text(bot: Running) -> None:
    bot.llm.script(Reply("Try <script>alert(1)</script> and **bold**"))
    bot.tg.fail_next("sendMessage", 400, "Bad Request: can't parse entities: unsupported tag")
    bot.tg.push_update(bot.tg.group_message("show me", mention_bot=True))
    sent = await bot.reply()
    assert sent.parse_mode is None
    assert sent.text == "Try <script>alert(1)</script> and bold"
    assert len(bot.tg.calls_to("sendMessage")) == 2


async def test_redelivered_update_is_processed_once(bot: Running) -> None:
    duplicate = bot.tg.group_message("hello", mention_bot=True, update_id=500)
    bot.tg.push_update(duplicate)
    bot.tg.push_update(duplicate)
    await bot.reply()
    # PTB handles updates in order, so once this later one is answered the copy was seen.
    bot.tg.push_update(bot.tg.group_message("again", mention_bot=True, update_id=501))
    await bot.reply()
    await bot.app.gateway.join()
    assert len(bot.llm.completions) == 2
    assert len(bot.tg.sent_log) == 2


async def test_retry_after_is_waited_out_and_message_delivered(bot: Running) -> None:
    bot.tg.fail_next("sendMessage", 429, "Too Many Requests: retry after 1", retry_after=1)
    bot.tg.push_update(bot.tg.group_message("hello", mention_bot=True))
    sent = await bot.reply()
    assert sent.chat_id == GROUP
    assert len(bot.tg.calls_to("sendMessage")) == 2


async def test_supergroup_migration_keeps_history_under_new_chat_id(bot: Running) -> None:
    tg = bot.tg
    tg.push_update(tg.group_message("the budget is 40k", chat_id=-5))
    tg.push_update(tg.migrate_message(-5, -1005))
    tg.push_update(tg.migrate_message(-5, -1005, in_new_chat=True))  # Telegram sends both
    tg.push_update(tg.group_message("what is the budget?", chat_id=-1005, mention_bot=True))
    sent = await bot.reply()
    assert sent.chat_id == -1005
    assert "[Alice] the budget is 40k" in await bot.history("telegram:-1005")
    assert await bot.history("telegram:-5") == []
    prompt = [m["content"] for m in bot.llm.completions[-1]["messages"]]
    assert "[Alice] the budget is 40k" in prompt


async def test_message_mentioning_only_another_bot_is_not_stored(bot: Running) -> None:
    bot.tg.push_update(bot.tg.group_message("@other_bot draw a cat"))
    bot.tg.push_update(bot.tg.group_message("hi", mention_bot=True))
    await bot.reply()
    history = await bot.history(f"telegram:{GROUP}")
    assert not any("draw a cat" in text for text in history)


async def test_command_for_another_bot_is_ignored(bot: Running) -> None:
    bot.tg.push_update(bot.tg.group_message("/help@other_bot"))
    bot.tg.push_update(bot.tg.group_message("/help@compact_bot"))
    sent = await bot.reply()
    assert "Commands:" in sent.text
    await bot.app.gateway.join()
    assert len(bot.tg.sent_log) == 1


async def test_admin_command_menu_includes_compress(bot: Running) -> None:
    menus = {
        key.split("|")[0]: [c["command"] for c in cmds] for key, cmds in bot.tg.commands.items()
    }
    admin = menus['{"type": "all_chat_administrators"}']
    group = menus['{"type": "all_group_chats"}']
    assert "compress" in admin and "reset" in admin
    assert "help" in group and "compress" not in group


async def test_activation_always_answers_unaddressed_messages(bot: Running) -> None:
    tg = bot.tg
    tg.set_chat_member(GROUP, 1, "administrator")
    tg.push_update(tg.group_message("/config activation always", user_id=1))
    await bot.reply()
    question = tg.group_message("anyone know the wifi password?", user_id=2)
    tg.push_update(question)
    sent = await bot.reply()
    assert sent.params["reply_parameters"]["message_id"] == question["message"]["message_id"]
    assert len(bot.llm.completions) == 1


async def test_stop_is_safe_to_call_twice(bot: Running) -> None:
    await bot.platform.stop()
    await bot.platform.stop()


async def test_rejected_token_fails_start_without_revealing_it(
    tmp_path: Path,
    fake_telegram: FakeTelegram,  # noqa: F811
    llm: FakeOpenAI,
) -> None:
    wrong = "777:WRONG-token-value"
    config = make_config(
        tmp_path, {"TELEGRAM_BOT_TOKEN": wrong, "TELEGRAM_API_BASE_URL": fake_telegram.base_url}
    )
    async with running_app(config) as app:
        platform = TelegramPlatform(config, app.gateway)
        with pytest.raises(TelegramStartError) as raised:
            await platform.start()
        assert wrong not in str(raised.value)
        assert raised.value.__cause__ is None and raised.value.__suppress_context__
        await platform.stop()


async def test_webhook_rejects_missing_secret_and_answers_with_it(
    tmp_path: Path,
    fake_telegram: FakeTelegram,  # noqa: F811
    llm: FakeOpenAI,
    free_port: int,  # noqa: F811
) -> None:
    env = {
        "TELEGRAM_WEBHOOK_URL": "https://bot.example.invalid/tg/hook",
        "TELEGRAM_WEBHOOK_LISTEN": f"127.0.0.1:{free_port}",
        "TELEGRAM_WEBHOOK_SECRET": WEBHOOK_SECRET,
    }
    async with serving(tmp_path, fake_telegram, llm, env) as running:
        assert fake_telegram.webhook["secret_token"] == WEBHOOK_SECRET
        url = f"http://127.0.0.1:{free_port}/tg/hook"
        update = fake_telegram.group_message("hi", mention_bot=True)
        assert await post_webhook_update(url, update) == 403
        assert await post_webhook_update(url, update, secret="wrong") == 403
        assert await post_webhook_update(url, update, secret=WEBHOOK_SECRET) == 200
        sent = await running.reply()
        assert sent.chat_id == GROUP
        assert not fake_telegram.calls_to("getUpdates")


async def test_compactbot_run_subprocess_answers_and_exits_on_sigterm(
    tmp_path: Path,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    pytest.importorskip(
        "compactbot.scheduler.overnight", reason="bot/service.py needs the scheduler"
    )
    log_path = tmp_path / "stderr.log"
    with log_path.open("wb") as stderr:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot",
            "run",
            cwd=tmp_path,  # no config.yaml or .env from the repo
            env=_subprocess_env(fake_telegram, tmp_path),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        fake_telegram.push_update(fake_telegram.group_message("hello there", mention_bot=True))
        sent = await asyncio.wait_for(fake_telegram.sent.get(), SUBPROCESS_REPLY_SECONDS)
        assert sent.chat_id == GROUP
        process.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(process.wait(), SIGTERM_EXIT_SECONDS)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    log = log_path.read_text()
    assert code == 0, log
    assert "telegram: polling as @compact_bot" in log
    assert fake_telegram.token not in log


def _subprocess_env(tg: FakeTelegram, tmp_path: Path) -> dict[str, str]:
    """The real environment minus every setting of ours, so no endpoint means the offline model."""
    ours = ("OPENAI_", "COMPACTBOT_", "TELEGRAM_", "DISCORD_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(ours)}
    return env | {
        "TELEGRAM_BOT_TOKEN": tg.token,
        "TELEGRAM_API_BASE_URL": tg.base_url,
        "COMPACTBOT_DB": str(tmp_path / "compactbot.db"),
        "PYTHONPATH": str(REPO_ROOT),
    }
