"""`COMPACTBOT_DB` values and the backend each one opens."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from compactbot.bot.store import (
    PostgresStore,
    SqliteStore,
    UnsupportedStore,
    create_store,
    parse_store_url,
)


@pytest.mark.parametrize(
    ("value", "location"),
    [
        ("./data/bot.db", "./data/bot.db"),
        ("sqlite:///var/lib/bot.db", "var/lib/bot.db"),
        ("sqlite:////var/lib/bot.db", "/var/lib/bot.db"),
        ("sqlite::memory:", ":memory:"),
        (":memory:", ":memory:"),
    ],
)
def test_paths_and_sqlite_urls_open_sqlite(value: str, location: str) -> None:
    target = parse_store_url(value)

    assert (target.backend, target.location) == ("sqlite", location)
    assert isinstance(create_store(value), SqliteStore)


@pytest.mark.parametrize("value", ["postgresql://bot@db:5432/compactbot", "postgres://db/x"])
def test_postgresql_urls_open_postgresql(value: str) -> None:
    assert parse_store_url(value).backend == "postgresql"
    assert isinstance(create_store(value), PostgresStore)


def test_shown_location_hides_the_password() -> None:
    target = parse_store_url("postgresql://bot:pw-123@db/compactbot")

    assert target.shown == "postgresql://bot:***@db/compactbot"
    assert parse_store_url("./bot.db").shown == "./bot.db"


@pytest.mark.parametrize("value", ["mysql://db/x", "http://db/x", "sqlite://"])
def test_other_schemes_and_empty_paths_are_refused(value: str) -> None:
    with pytest.raises(UnsupportedStore):
        parse_store_url(value)


def test_start_up_with_another_scheme_exits_2_with_one_line_naming_the_key(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "compactbot.bot", "chats"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "COMPACTBOT_DB": "mysql://bot:pw-123@db/compactbot"},
        cwd=tmp_path,
        timeout=60,
    )

    assert run.returncode == 2
    assert run.stderr.count("\n") == 1
    assert run.stderr.startswith("config error: storage.database (COMPACTBOT_DB)")
    assert "pw-123" not in run.stderr
