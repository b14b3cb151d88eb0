"""The memory as a person meets it: offline /compress on a small window, /status, --memory."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_console_and_operator import bot_lines, chatter, compactbot

SMALL_WINDOW = {"COMPACTBOT_CONTEXT_LENGTH": "8192"}
FACTS = (
    "bob: FACT: The launch codename is PELICAN and the deadline is 2027-01-20.\n"
    "alice: CONSTRAINT: Spend cap is €800. Never exceed it without approval.\n"
)


def test_offline_compress_on_an_8k_window_compresses_an_80_message_chat(tmp_path: Path) -> None:
    stdin = chatter(3) + FACTS + chatter(75, seed=4) + "alice: /compress\nalice: /status\n"
    run = compactbot(tmp_path, "console", "--room", "m", "--admin", "alice", stdin=stdin,
                     **SMALL_WINDOW)  # fmt: skip
    lines = bot_lines(run.stdout)
    compressed = [line for line in lines if line.startswith("🗜️ Compressed")]
    assert compressed, lines[-5:]
    assert not any("kept verbatim" in line for line in lines)
    memory = next(line for line in lines if line.startswith("Memory: "))
    assert "participants" in memory and "rule" in memory and "fact" in memory


def test_history_memory_lists_entries_with_their_sources_and_supersessions(tmp_path: Path) -> None:
    stdin = (
        chatter(3)
        + "alice: The deploy day is Tuesday.\n"
        + chatter(40, seed=2)
        + "alice: /compress\n"
        + "bob: Update: the deploy day moved to Thursday.\n"
        + chatter(80, seed=3)
        + "alice: /compress\n"
    )
    compactbot(tmp_path, "console", "--room", "h", "--admin", "alice", stdin=stdin, **SMALL_WINDOW)
    listed = compactbot(tmp_path, "history", "console:h", "--memory")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    old = next(line for line in lines if "deploy day is Tuesday" in line)
    new = next(line for line in lines if "deploy day moved to Thursday" in line)
    assert "[superseded by #" in old and "<- " in old
    assert "[superseded" not in new and "(subject: deploy day)" in new


def test_history_never_prints_a_members_terminal_escape_sequences(tmp_path: Path) -> None:
    # A colour change, an OSC window title and a cursor move, as a member could type them.
    hostile = "mallory: hi \x1b[31mRED\x1b[0m \x1b]0;pwned\x07 \x1b[2J bye\n"
    compactbot(tmp_path, "console", "--room", "e", stdin=chatter(2) + hostile)
    listed = compactbot(tmp_path, "history", "console:e")
    assert listed.returncode == 0, listed.stderr
    assert "\x1b" not in listed.stdout and "\x07" not in listed.stdout
    assert "?[31mRED?[0m" in listed.stdout
