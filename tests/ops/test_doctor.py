"""`compactbot doctor` against the fakes: a line per finding, exit 1 while anything needs fixing."""

from __future__ import annotations

import asyncio
import io
import os
import sqlite3
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from compactbot.bot.operators.doctor import run_doctor
from compactbot.bot.operators.doctor_report import NamedCheck
from compactbot.bot.operators.doctor_store import check_store
from compactbot.bot.store.sqlite.schema.migrations import LATEST_VERSION
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.fixtures import fake_discord, fake_telegram  # noqa: F401  (pytest fixtures)
from tests.fakes.openai_server import Error, FakeOpenAI
from tests.fakes.telegram_server import FakeTelegram
from tests.harness import make_config

pytestmark = pytest.mark.filterwarnings("ignore::telegram.warnings.PTBDeprecationWarning")

RIGHT_KEY = "sk-right-key-for-fakes"
SUBPROCESS_SECONDS = 60  # interpreter start and imports on a shared 2-core machine
REPO_ROOT = Path(__file__).resolve().parents[2]


def env_for(tg: FakeTelegram, llm: FakeOpenAI, tmp_path: Path, key: str = RIGHT_KEY) -> dict:
    return {
        "COMPACTBOT_DB": str(tmp_path / "data" / "compactbot.db"),
        "TELEGRAM_BOT_TOKEN": tg.token,
        "TELEGRAM_API_BASE_URL": tg.base_url,
        "OPENAI_BASE_URL": llm.base_url,
        "OPENAI_API_KEY": key,
        "COMPACTBOT_MODEL": "fake-model",
    }


async def doctor_process(env: Mapping[str, str], cwd: Path) -> tuple[int, list[str]]:
    """The real `compactbot doctor`, as an operator runs it, with only `env` configured."""
    keep = {k: os.environ[k] for k in ("PATH", "HOME", "TIKTOKEN_CACHE_DIR") if k in os.environ}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "doctor",
        cwd=cwd,
        env={**keep, "PYTHONPATH": str(REPO_ROOT), **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), SUBPROCESS_SECONDS)
    assert not err.strip(), err.decode()
    return proc.returncode or 0, out.decode().splitlines()


def fixes(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("FIX")]


async def test_doctor_reports_privacy_mode_and_a_wrong_api_key_and_exits_1(
    tmp_path: Path,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    fake_telegram.can_read_all_group_messages = False
    async with FakeOpenAI(api_key=RIGHT_KEY) as llm:
        env = env_for(fake_telegram, llm, tmp_path, key="sk-wrong-key")
        code, lines = await doctor_process(env, tmp_path)
    assert code == 1
    problems = fixes(lines)
    assert len(problems) == 2, lines
    privacy = [p for p in problems if p.startswith("FIX   telegram: privacy mode is on")]
    wrong_key = [p for p in problems if "refused the API key (401)" in p]
    assert len(privacy) == 1 and "/setprivacy" in privacy[0]
    assert wrong_key == [
        f"FIX   llm: {llm.base_url} refused the API key (401): check OPENAI_API_KEY"
    ]
    assert lines[-1] == "2 problem(s) found"
    assert "sk-wrong-key" not in "\n".join(lines)


async def test_doctor_exits_0_when_all_is_well(
    tmp_path: Path,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    fake_telegram.can_read_all_group_messages = True
    async with FakeOpenAI(api_key=RIGHT_KEY, context_length=32_000) as llm:
        code, lines = await doctor_process(env_for(fake_telegram, llm, tmp_path), tmp_path)
    assert (code, fixes(lines)) == (0, [])
    assert lines[-1] == "all is well"
    assert "ok    telegram: token works: @compact_bot (id 999)" in lines
    assert "ok    llm: window 32,000 tokens (reported by the endpoint)" in lines
    assert "skip  discord: DISCORD_BOT_TOKEN not set" in lines


async def run_in_process(config_env: dict, tmp_path: Path, *, live: bool = False) -> list[str]:
    out = io.StringIO()
    await run_doctor(make_config(tmp_path, config_env), live=live, out=out)
    return out.getvalue().splitlines()


async def test_doctor_live_sends_one_tiny_completion(
    tmp_path: Path,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    async with FakeOpenAI(api_key=RIGHT_KEY) as llm:
        env = env_for(fake_telegram, llm, tmp_path)
        lines = await run_in_process(env, tmp_path, live=True)
        (request,) = llm.completions
    assert request["max_tokens"] == 5 and len(request["messages"]) == 1
    assert any(line.startswith("ok    llm: a test completion with fake-model") for line in lines)


async def test_doctor_live_reports_a_failing_completion(
    tmp_path: Path,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    async with FakeOpenAI(api_key=RIGHT_KEY) as llm:
        llm.script(Error.server_error())
        lines = await run_in_process(env_for(fake_telegram, llm, tmp_path), tmp_path, live=True)
    assert "FIX   llm: a test completion with fake-model failed (500)" in lines


async def test_doctor_names_a_model_the_endpoint_does_not_offer(
    tmp_path: Path,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    async with FakeOpenAI(api_key=RIGHT_KEY, models=("other-model",)) as llm:
        lines = await run_in_process(env_for(fake_telegram, llm, tmp_path), tmp_path)
    assert "FIX   llm: reply model fake-model is not offered (it offers other-model)" in lines


async def test_doctor_flags_a_configured_window_larger_than_the_endpoints(
    tmp_path: Path,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    async with FakeOpenAI(api_key=RIGHT_KEY, context_length=8_000) as llm:
        env = {**env_for(fake_telegram, llm, tmp_path), "COMPACTBOT_CONTEXT_LENGTH": "32000"}
        lines = await run_in_process(env, tmp_path)
    (problem,) = [line for line in fixes(lines) if "llm:" in line]
    assert problem.startswith("FIX   llm: COMPACTBOT_CONTEXT_LENGTH=32,000 exceeds the window")


async def test_doctor_reports_a_webhook_delivery_error(
    tmp_path: Path,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    fake_telegram.can_read_all_group_messages = True
    fake_telegram.webhook_error = "Connection refused"
    async with FakeOpenAI(api_key=RIGHT_KEY) as llm:
        lines = await run_in_process(env_for(fake_telegram, llm, tmp_path), tmp_path)
    assert fixes(lines) == [
        "FIX   telegram: Telegram reports a webhook delivery error: Connection refused"
    ]


async def test_doctor_reports_a_refused_telegram_token(
    tmp_path: Path,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    async with FakeOpenAI(api_key=RIGHT_KEY) as llm:
        env = {**env_for(fake_telegram, llm, tmp_path), "TELEGRAM_BOT_TOKEN": "123:WRONG"}
        lines = await run_in_process(env, tmp_path)
    (problem,) = fixes(lines)
    assert problem.startswith("FIX   telegram: the Bot API refused TELEGRAM_BOT_TOKEN")
    assert "123:WRONG" not in "\n".join(lines)


async def test_doctor_reports_the_discord_message_content_intent_off(
    tmp_path: Path,
    fake_discord: FakeDiscord,  # noqa: F811
) -> None:
    fake_discord.app_flags = 0
    lines = await run_in_process({"DISCORD_BOT_TOKEN": fake_discord.token}, tmp_path)
    assert fixes(lines) == [
        "FIX   discord: the Message Content intent is off: developer portal → Bot → "
        "Privileged Gateway Intents → Message Content Intent"
    ]


async def test_doctor_accepts_the_discord_message_content_intent_on(
    tmp_path: Path,
    fake_discord: FakeDiscord,  # noqa: F811
) -> None:
    lines = await run_in_process({"DISCORD_BOT_TOKEN": fake_discord.token}, tmp_path)
    assert "ok    discord: the Message Content intent is enabled" in lines
    assert fixes(lines) == []


async def store_lines(tmp_path: Path, env: dict | None = None) -> list[str]:
    findings = await check_store(make_config(tmp_path, env), False)
    return [f.line() for f in findings]


async def test_doctor_store_reports_the_current_schema_of_an_existing_database(
    tmp_path: Path,
) -> None:
    from compactbot.bot.store import SqliteStore

    async with SqliteStore(tmp_path / "compactbot.db"):
        pass
    lines = await store_lines(tmp_path)
    assert any(f"schema v{LATEST_VERSION} (current)" in line for line in lines)
    assert not fixes(lines)


async def test_doctor_store_flags_a_schema_newer_than_this_version(tmp_path: Path) -> None:
    path = tmp_path / "compactbot.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at REAL)")
        conn.execute("INSERT INTO schema_version VALUES (?, 0)", (LATEST_VERSION + 1,))
    lines = await store_lines(tmp_path)
    assert fixes(lines) == [
        f"FIX   store: schema v{LATEST_VERSION + 1} is newer than this compactbot "
        f"(v{LATEST_VERSION})"
    ]


async def test_doctor_store_creates_nothing_where_no_database_exists(tmp_path: Path) -> None:
    lines = await store_lines(tmp_path, {"COMPACTBOT_DB": str(tmp_path / "new" / "x.db")})
    assert any("no database yet" in line for line in lines)
    assert not (tmp_path / "new").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write read-only files")
async def test_doctor_store_flags_a_read_only_database(tmp_path: Path) -> None:
    path = tmp_path / "compactbot.db"
    sqlite3.connect(path).close()
    path.chmod(0o444)
    lines = await store_lines(tmp_path)
    assert f"FIX   store: {path} or its folder is not writable by this user" in lines


async def test_doctor_postgres_trigram_check_runs_only_for_a_postgres_store(
    tmp_path: Path,
) -> None:
    sqlite_lines = await store_lines(tmp_path)
    assert not any("PostgreSQL" in line for line in sqlite_lines)
    url = "postgresql://nobody@127.0.0.1:1/none"
    (line,) = await store_lines(tmp_path, {"COMPACTBOT_DB": url})
    assert line.startswith("FIX   store: ") and (
        "asyncpg is not installed" in line or "cannot connect to PostgreSQL" in line
    )


async def test_doctor_counts_a_crashing_check_as_a_problem(tmp_path: Path) -> None:
    async def broken(config: object, live: bool) -> list:
        raise RuntimeError("boom")

    out = io.StringIO()
    code = await run_doctor(make_config(tmp_path), checks=[NamedCheck("x", broken)], out=out)
    assert code == 1
    assert out.getvalue().splitlines()[0] == "FIX   x: the check itself failed (RuntimeError)"


async def test_doctor_never_prints_credentials_in_the_endpoint_url(tmp_path: Path) -> None:
    async with FakeOpenAI(api_key=RIGHT_KEY) as llm:
        url = llm.base_url.replace("http://", "http://user:hunter2@")
        env = {"OPENAI_BASE_URL": url, "OPENAI_API_KEY": "sk-wrong", "COMPACTBOT_MODEL": "m"}
        lines = await run_in_process(env, tmp_path)
    assert f"FIX   llm: {llm.base_url} refused the API key (401): check OPENAI_API_KEY" in lines
    assert "hunter2" not in "\n".join(lines)
