"""The console room and operator CLI, driven as a person would: through the real entry point."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WORDS = ["deploy", "lunch", "tests", "release", "coffee", "budget", "design", "docs", "ok"]


def env_for(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "COMPACTBOT_DB": str(tmp_path / "bot.db"),
        "TIKTOKEN_CACHE_DIR": os.environ.get("TIKTOKEN_CACHE_DIR", str(tmp_path / "tk")),
    }
    env.update(extra)
    return env


def compactbot(tmp_path: Path, *args: str, stdin: str = "", **env: str):
    return subprocess.run(
        [sys.executable, "-m", "compactbot.bot", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env_for(tmp_path, **env),
        cwd=tmp_path,
        timeout=120,
    )


def chatter(n: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    names = ["alice", "bob", "carol"]
    return "".join(
        f"{names[i % 3]}: " + " ".join(rng.choice(WORDS) for _ in range(25)) + "\n"
        for i in range(n)
    )


def bot_lines(output: str) -> list[str]:
    return [line[len("bot: ") :] for line in output.splitlines() if line.startswith("bot: ")]


def test_scripted_console_session_enforces_admin_rights_and_keeps_pins(tmp_path: Path) -> None:
    script = (
        chatter(30)
        + "bob: /compress\n"
        + "alice: /compress\n"
        + "alice: /status\n"
        + "alice: /config threshold 0.95\n"
        + "alice: /pin Never post customer emails in this group\n"
        + chatter(30, seed=2)
        + "alice: /compress\n"
        + "alice: /pins\n"
    )
    run = compactbot(tmp_path, "console", "--room", "t", "--admin", "alice", stdin=script)
    assert run.returncode == 0, run.stderr
    lines = bot_lines(run.stdout)
    assert any(line.startswith("⛔ /compress needs chat-admin rights") for line in lines)
    compressed = [line for line in lines if line.startswith("🗜️ Compressed:")]
    assert len(compressed) == 2 and "→" in compressed[0]
    assert "Compactions: 1" in lines
    refusal = next(line for line in lines if "threshold 0.95" in line)
    assert "0.30–0.90" in refusal
    pins_at = lines.index("📌 Pins:")
    assert lines[pins_at + 1] == "1. Never post customer emails in this group"
    assert "offline" in run.stderr  # the banner names the model in use


def test_operator_config_set_rejects_bad_value_with_one_line(tmp_path: Path) -> None:
    compactbot(tmp_path, "console", "--room", "t", stdin="alice: hello\n")
    bad = compactbot(tmp_path, "config", "set", "console:t", "threshold", "abc")
    assert bad.returncode != 0
    assert len(bad.stderr.strip().splitlines()) == 1
    assert "threshold" in bad.stderr


def test_operator_setting_is_shown_and_used_by_the_next_compaction(tmp_path: Path) -> None:
    compactbot(tmp_path, "console", "--room", "t", stdin=chatter(30))
    ok = compactbot(tmp_path, "config", "set", "console:t", "protect_last_n", "5")
    assert ok.returncode == 0, ok.stderr
    shown = compactbot(tmp_path, "config", "get", "console:t", "protect_last_n")
    assert shown.stdout.startswith("protect_last_n = 5 (set here")
    compressed = compactbot(tmp_path, "compress", "console:t")
    assert compressed.returncode == 0, compressed.stderr
    # head of 3 + the summary + a tail floor of max(3, min(5, 8)) = 5 messages
    assert "30 → 9 messages" in compressed.stdout


def test_new_starts_a_session_and_history_all_keeps_the_old_one(tmp_path: Path) -> None:
    run = compactbot(
        tmp_path,
        "console",
        "--room",
        "t",
        "--admin",
        "alice",
        stdin="alice: the old plan was tuesday\nalice: /new\nalice: fresh start\n",
    )
    assert any(line.startswith("🆕 Started a new conversation") for line in bot_lines(run.stdout))
    active = compactbot(tmp_path, "history", "console:t")
    assert "fresh start" in active.stdout and "old plan" not in active.stdout
    everything = compactbot(tmp_path, "history", "console:t", "--all")
    assert "old plan was tuesday" in everything.stdout and "fresh start" in everything.stdout
    sessions = {line.split()[1] for line in everything.stdout.splitlines()}
    assert len(sessions) == 2


def test_unknown_chat_is_a_one_line_error(tmp_path: Path) -> None:
    run = compactbot(tmp_path, "history", "telegram:404")
    assert run.returncode == 1
    assert run.stderr.strip() == "error: unknown chat 'telegram:404' (see `compactbot chats`)"


@pytest.mark.parametrize(
    ("env", "yaml_text", "key"),
    [
        ({"COMPACTBOT_CONTEXT_LENGTH": "-5"}, None, "model.context_length"),
        ({"COMPACTBOT_LOG_LEVEL": "LOUD"}, None, "logging.level"),
        ({"OPENAI_BASE_URL": "not a url"}, None, "model.base_url"),
        ({"DISCORD_GUILD_ID": "abc"}, None, "discord.guild_id"),
        ({}, "compression:\n  threshold: 1.5\n", "compression.threshold"),
        ({}, "overnight:\n  timezone: Mars/Base\n", "overnight.timezone"),
        ({}, "bounds:\n  threshold: [0.9, 0.3]\n", "bounds.threshold"),
    ],
)
def test_bad_configuration_exits_2_with_one_line_naming_the_key(
    tmp_path: Path, env: dict[str, str], yaml_text: str | None, key: str
) -> None:
    if yaml_text is not None:
        (tmp_path / "config.yaml").write_text(yaml_text)
    run = compactbot(tmp_path, "chats", **env)
    assert run.returncode == 2
    assert len(run.stderr.strip().splitlines()) == 1
    assert key in run.stderr


@pytest.mark.skipif(
    not (REPO / ".venv" / "bin" / "compactbot").exists(), reason="needs make's venv"
)
def test_make_run_without_env_opens_the_offline_console_room(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    run = subprocess.run(
        ["make", "-s", "run"],
        input="alice: hello @bot\n",
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "compactbot console — room 'main'" in run.stderr
    assert "[offline" in run.stderr
    assert bot_lines(run.stdout)[0].startswith("🔌 offline mode")


def waiting_console(tmp_path: Path, **env: str) -> subprocess.Popen[str]:
    """`compactbot run` with no platform token: the console room, once it waits for input."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "compactbot.bot", "run"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env_for(tmp_path, **env),
        cwd=tmp_path,
    )
    assert proc.stderr is not None and proc.stdin is not None
    while "Ctrl-D to quit" not in (proc.stderr.readline() or "Ctrl-D to quit"):
        pass
    return proc


def test_console_exits_cleanly_on_sigterm_while_waiting_for_input(tmp_path: Path) -> None:
    proc = waiting_console(tmp_path)
    assert proc.stdin is not None
    proc.stdin.write("alice: hello @bot\n")
    proc.stdin.flush()
    assert proc.stdout is not None
    assert proc.stdout.readline().startswith("bot: ")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=20) == 0
    proc.stdin.close()
