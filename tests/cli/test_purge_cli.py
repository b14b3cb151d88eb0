"""`compactbot purge`: an operator forgets a member; history, memory and the file lose the text."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_console_and_operator import chatter, compactbot

SMALL_WINDOW = {"COMPACTBOT_CONTEXT_LENGTH": "8192"}
SECRET = "Zanzibar"


def test_purge_of_a_member_leaves_no_line_in_history_or_memory(tmp_path: Path) -> None:
    stdin = (
        chatter(3)
        + f"dave: FACT: my home address is 7 {SECRET} Road, flat 3.\n"
        + "erin: FACT: The launch codename is PELICAN.\n"
        + chatter(40, seed=2)
        + "alice: /compress\n"
    )
    compactbot(tmp_path, "console", "--room", "p", "--admin", "alice", stdin=stdin, **SMALL_WINDOW)
    before = compactbot(tmp_path, "history", "console:p", "--all", "--memory")
    assert SECRET in before.stdout, before.stderr

    purged = compactbot(tmp_path, "purge", "--chat", "console:p", "--member", "dave")

    assert purged.returncode == 0, purged.stderr
    assert "purged" in purged.stdout
    memory = compactbot(tmp_path, "history", "console:p", "--memory")
    history = compactbot(tmp_path, "history", "console:p", "--all")
    assert memory.returncode == history.returncode == 0
    assert [line for line in memory.stdout.splitlines() if SECRET in line] == []
    assert SECRET not in history.stdout
    assert "PELICAN" in memory.stdout + history.stdout
    files = b"".join(p.read_bytes() for p in tmp_path.rglob("*.db*") if p.is_file())
    assert SECRET.encode() not in files


def test_purge_needs_a_member_or_a_message(tmp_path: Path) -> None:
    run = compactbot(tmp_path, "purge", "--chat", "console:p")
    assert run.returncode != 0
    assert "--member" in run.stderr
