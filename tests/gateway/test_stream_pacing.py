"""PacedStream on a fake clock: coalesced frames, the pace, flood waits, the final text."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field

from compactbot.bot.turns.streaming import FloodWait, PacedStream, PreviewFailed


@dataclass
class FakeTime:
    now: float = 100.0
    slept: list[float] = field(default_factory=list)

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)


@dataclass
class Surface:
    time: FakeTime
    frames: list[tuple[float, str]] = field(default_factory=list)
    finals: list[tuple[float, str]] = field(default_factory=list)
    fail: list[Exception] = field(default_factory=list)

    async def show(self, text: str) -> None:
        if self.fail:
            raise self.fail.pop(0)
        self.frames.append((self.time.now, text))

    async def finish(self, text: str) -> None:
        self.finals.append((self.time.now, text))


async def _settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


def _stream(surface: Surface, time: FakeTime) -> PacedStream:
    return PacedStream(surface, interval_seconds=1.0, clock=time.clock, sleep=time.sleep)


async def test_updates_between_frames_are_coalesced_into_the_newest_text() -> None:
    time = FakeTime()
    surface = Surface(time)
    stream = _stream(surface, time)
    for n in range(1, 6):
        await stream.update("x" * n)
    await _settle()
    assert [text for _, text in surface.frames] == ["xxxxx"]


async def test_frames_are_at_least_the_interval_apart() -> None:
    time = FakeTime()
    surface = Surface(time)
    stream = _stream(surface, time)
    for n in range(1, 30):
        await stream.update("y" * n)
        time.now += 0.1
        await _settle()
    await stream.finish("final")
    moments = [at for at, _ in surface.frames] + [surface.finals[0][0]]
    assert len(surface.frames) >= 2
    assert all(b - a >= 1.0 for a, b in itertools.pairwise(moments))
    assert surface.finals[0][1] == "final"


async def test_flood_wait_pushes_the_next_frame_and_the_final_back() -> None:
    time = FakeTime()
    surface = Surface(time, fail=[FloodWait(7.0)])
    stream = _stream(surface, time)
    refused_at = time.now
    await stream.update("a")
    await _settle()
    await stream.update("ab")
    await _settle()
    assert surface.frames[0][0] >= refused_at + 7.0
    await stream.finish("abc")
    assert surface.finals == [(surface.frames[-1][0] + 1.0, "abc")]


async def test_a_failed_preview_stops_previews_but_the_final_is_delivered() -> None:
    time = FakeTime()
    surface = Surface(time, fail=[PreviewFailed("forbidden")])
    stream = _stream(surface, time)
    await stream.update("a")
    await _settle()
    await stream.update("ab")
    await _settle()
    await stream.finish("all of it")
    assert surface.frames == []
    assert [text for _, text in surface.finals] == ["all of it"]


async def test_a_fast_answer_goes_straight_to_the_final_delivery() -> None:
    time = FakeTime()
    surface = Surface(time)
    stream = _stream(surface, time)
    await stream.update("qu")
    await stream.finish("quick")
    assert surface.frames == []
    assert surface.finals == [(100.0, "quick")]


async def test_the_first_frame_waits_one_interval() -> None:
    time = FakeTime()
    surface = Surface(time)
    stream = _stream(surface, time)
    await stream.update("slow")
    await _settle()
    assert surface.frames == [(101.0, "slow")]
