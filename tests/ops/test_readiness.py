"""/readyz without platforms: the store going away and coming back, a queue that stops moving."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from compactbot.bot.app import App
from compactbot.bot.llm.offline_model import OfflineModel
from compactbot.bot.operators.endpoint import OperatorPortError
from compactbot.bot.operators.health import QUEUE_STUCK_SECONDS, QueueProbe, Readiness
from compactbot.bot.turns.lanes import LaneScheduler
from tests.fakes.fixtures import free_port  # noqa: F401  (pytest fixture)
from tests.harness import make_config
from tests.ops.scrape import get


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


async def test_readyz_follows_the_store_connection_closing_and_reopening(
    tmp_path: Path,
    free_port: int,  # noqa: F811
) -> None:
    config = make_config(tmp_path, {"COMPACTBOT_METRICS_LISTEN": f"127.0.0.1:{free_port}"})
    async with App(config, llm=OfflineModel()) as app:
        await app.start_operator_endpoint()
        assert await get(free_port, "/readyz") == (200, "ready\n")
        store = app.services.store
        await store.close()
        assert await get(free_port, "/readyz") == (503, "store: not answering (StoreError)\n")
        assert await get(free_port, "/healthz") == (200, "ok\n")  # alive, just not ready
        await store.open()
        assert await get(free_port, "/readyz") == (200, "ready\n")


async def test_operator_port_stays_closed_unless_configured(tmp_path: Path) -> None:
    async with App(make_config(tmp_path), llm=OfflineModel()) as app:
        await app.start_operator_endpoint()
        assert app._endpoint is None


async def test_queue_probe_reports_a_job_waiting_too_long() -> None:
    clock = FakeClock()
    lanes = LaneScheduler(1, clock=clock)
    release = asyncio.Event()
    started = asyncio.Event()

    async def blocker() -> None:
        started.set()
        await release.wait()

    async def nothing() -> None:
        return None

    lanes.submit("a", blocker)
    await started.wait()
    lanes.submit("b", nothing)  # waits for the only slot
    readiness = Readiness([QueueProbe(lanes)])
    assert lanes.queued_jobs == 1
    clock.now += QUEUE_STUCK_SECONDS
    assert (await readiness.check()).ready
    clock.now += 1
    report = await readiness.check()
    assert report.problems == (
        f"queue: a job has waited {QUEUE_STUCK_SECONDS + 1:.0f}s "
        f"(limit {QUEUE_STUCK_SECONDS:.0f}s)",
    )
    release.set()
    await lanes.join()
    assert lanes.queued_jobs == 0 and lanes.oldest_wait_seconds() == 0
    assert (await readiness.check()).ready


async def test_a_hanging_probe_is_reported_not_awaited_forever(monkeypatch) -> None:
    import compactbot.bot.operators.health

    monkeypatch.setattr(compactbot.bot.operators.health, "PROBE_TIMEOUT_SECONDS", 0.01)

    class Hangs:
        name = "slow"

        async def problem(self) -> str | None:
            await asyncio.Event().wait()
            return None

    report = await Readiness([Hangs()]).check()
    assert report.problems == ("slow: no answer within 0s",)


def dockerfile_healthcheck() -> str:
    text = (Path(__file__).resolve().parents[2] / "Dockerfile").read_text()
    return text.split('CMD python -c "', 1)[1].split('"\n', 1)[0]


async def healthcheck_status(command: str, listen: str) -> int:
    env = {**os.environ, "COMPACTBOT_METRICS_LISTEN": listen}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", command, env=env, stderr=asyncio.subprocess.DEVNULL
    )
    return await proc.wait()


async def test_dockerfile_healthcheck_follows_readyz(
    tmp_path: Path,
    free_port: int,  # noqa: F811
) -> None:
    command = await asyncio.to_thread(dockerfile_healthcheck)
    listen = f"0.0.0.0:{free_port}"
    config = make_config(tmp_path, {"COMPACTBOT_METRICS_LISTEN": listen})
    async with App(config, llm=OfflineModel()) as app:
        await app.start_operator_endpoint()
        assert await healthcheck_status(command, listen) == 0
        await app.services.store.close()
        assert await healthcheck_status(command, listen) == 1
        await app.services.store.open()


async def test_a_taken_operator_port_is_one_clear_error(
    tmp_path: Path,
    free_port: int,  # noqa: F811
) -> None:
    config = make_config(tmp_path, {"COMPACTBOT_METRICS_LISTEN": f"127.0.0.1:{free_port}"})
    async with App(config, llm=OfflineModel()) as first:
        await first.start_operator_endpoint()
        async with App(
            make_config(
                tmp_path / "second", {"COMPACTBOT_METRICS_LISTEN": f"127.0.0.1:{free_port}"}
            ),
            llm=OfflineModel(),
        ) as second:
            with pytest.raises(OperatorPortError) as caught:
                await second.start_operator_endpoint()
    assert str(caught.value).startswith(
        f"COMPACTBOT_METRICS_LISTEN: cannot listen on 127.0.0.1:{free_port} ("
    )
