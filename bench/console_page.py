"""Console page loads on a big chat (SPEC 18): `python -m bench.console_page [--pg]`.

A chat with 50,000 archived messages and 2,000 memory entries, compacted the way the service
compacts, served by a real App on SQLite (or PostgreSQL on COMPACTBOT_TEST_PG_DSN with --pg). Each
page is requested REQUESTS times by a signed-in operator over loopback; the time is from sending
the request to the last byte of the page, so it bounds the server's own time from above. Target:
p95 at most 200 ms. Writes bench/RESULTS-console.md.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp

from compactbot.bot.app import App
from compactbot.bot.llm.offline_model import OfflineModel
from compactbot.bot.operators.console.urls import chat_url
from tests import postgres_server
from tests.console.seed import LIVE_TAIL, TALK, seed_chat
from tests.harness import make_config

ARCHIVED_MESSAGES = 50_000
MEMORY_ENTRIES = 2_000
REQUESTS = 40
WARMUP_REQUESTS = 3
TARGET_MS = 200.0
CHAT = "telegram:-100500"
TOKEN = "bench-token-0123456789abcdef"
RESULTS = Path(__file__).with_name("RESULTS-console.md")
CSRF = re.compile(r'name="csrf" value="([0-9a-f]+)"')


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _pages(session_id: int, entry_id: int) -> list[tuple[str, str]]:
    return [
        ("overview", "/console/"),
        ("chat: summary and history", chat_url(CHAT)),
        ("memory (all kinds, page 1)", chat_url(CHAT, "memory")),
        ("memory (facts, page 3)", chat_url(CHAT, "memory", kind="fact", page=3)),
        ("entry sources", chat_url(CHAT, "sources", session=session_id, entry=entry_id)),
        ("search (archive)", chat_url(CHAT, "search", q="feature-42")),
        ("settings", chat_url(CHAT, "settings")),
        ("usage (30 days)", "/console/usage"),
        ("audit log", "/console/audit"),
    ]


@asynccontextmanager
async def _database(pg: bool) -> AsyncIterator[str]:
    if not pg:
        with tempfile.TemporaryDirectory() as folder:
            yield str(Path(folder) / "console-bench.db")
        return
    async with postgres_server.fresh_schema(postgres_server.base_dsn()) as dsn:
        yield dsn


async def _signed_in(http: aiohttp.ClientSession, base: str) -> None:
    form = await http.get(f"{base}/console/signin")
    csrf = CSRF.search(await form.text())
    assert csrf is not None
    response = await http.post(
        f"{base}/console/signin", data={"csrf": csrf.group(1), "token": TOKEN, "next": "/console/"}
    )
    assert response.status == 200, response.status


async def run(pg: bool) -> list[str]:
    async with _database(pg) as database:
        port = _free_port()
        env = {
            "COMPACTBOT_DB": database,
            "COMPACTBOT_CONSOLE": "on",
            "COMPACTBOT_METRICS_LISTEN": f"127.0.0.1:{port}",
            "COMPACTBOT_CONSOLE_TOKENS": f"bench:{TOKEN}",
        }
        config = make_config(Path(tempfile.gettempdir()), env)
        async with App(config, llm=OfflineModel()) as app:
            started = time.perf_counter()
            seeded = await seed_chat(
                app.services.store,
                CHAT,
                title="Big chat",
                platform="telegram",
                start=time.time() - 3600,
                # The seed's talk and filler, less the live tail, are exactly the archive.
                filler_messages=ARCHIVED_MESSAGES + LIVE_TAIL - len(TALK),
                extra_entries=MEMORY_ENTRIES - 7,
                usage_days=30,
            )
            print(f"seeded in {time.perf_counter() - started:.0f}s", file=sys.stderr)
            archived = await app.services.store.count_archived(CHAT)
            entries = len((await app.services.store.load_memory(seeded.session_id)).entries)
            await app.start_operator_endpoint()
            base = f"http://127.0.0.1:{port}"
            lines = [
                f"Chat: {archived:,} archived messages, {entries:,} memory entries; "
                f"{'PostgreSQL' if pg else 'SQLite'}; {REQUESTS} requests per page.",
                "",
                "| page | p50 ms | p95 ms | max ms | ≤ 200 ms at p95 |",
                "| --- | ---: | ---: | ---: | --- |",
            ]
            jar = aiohttp.CookieJar(unsafe=True)
            async with aiohttp.ClientSession(cookie_jar=jar) as http:
                await _signed_in(http, base)
                for label, path in _pages(seeded.session_id, MEMORY_ENTRIES // 2):
                    lines.append(await _measure(http, base + path, label))
    return lines


async def _measure(http: aiohttp.ClientSession, url: str, label: str) -> str:
    millis = []
    for attempt in range(WARMUP_REQUESTS + REQUESTS):
        started = time.perf_counter()
        async with http.get(url) as response:
            await response.read()
            assert response.status == 200, (url, response.status)
        if attempt >= WARMUP_REQUESTS:
            millis.append((time.perf_counter() - started) * 1000)
    millis.sort()
    p50 = statistics.median(millis)
    p95 = millis[int(0.95 * (len(millis) - 1))]
    verdict = "yes" if p95 <= TARGET_MS else "**no**"
    return f"| {label} | {p50:.1f} | {p95:.1f} | {millis[-1]:.1f} | {verdict} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pg", action="store_true", help="PostgreSQL (COMPACTBOT_TEST_PG_DSN)")
    args = parser.parse_args()
    lines = asyncio.run(run(args.pg))
    report = "\n".join(["# Console page loads (`python -m bench.console_page`)", "", *lines, ""])
    print(report)
    if not args.pg:
        RESULTS.write_text(report, encoding="utf-8")
    else:
        with RESULTS.open("a", encoding="utf-8") as out:
            out.write("\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
