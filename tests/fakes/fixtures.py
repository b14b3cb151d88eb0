"""Pytest fixtures for the platform fakes; the root conftest imports them by name."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator

import pytest

from tests.fakes.discord_server import FakeDiscord
from tests.fakes.telegram_server import FakeTelegram


@pytest.fixture
async def fake_telegram() -> AsyncIterator[FakeTelegram]:
    """A running fake Bot API; point PTB at `.base_url` / `.base_file_url`."""
    async with FakeTelegram() as fake:
        yield fake


@pytest.fixture
async def fake_discord(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeDiscord]:
    """A running fake Discord, already installed into discord.py's Route and gateway."""
    async with FakeDiscord() as fake:
        fake.install(monkeypatch)
        yield fake


@pytest.fixture
def free_port() -> int:
    """A port free right now, for servers (PTB's webhook) that cannot report a port-0 bind."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
