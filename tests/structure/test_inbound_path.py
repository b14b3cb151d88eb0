"""The inbound path, file by file (issue 38): a Telegram update through real PTB to its stored
row, and the chat's lane to the model call, each across at most 7 of our files, as drawn in the
README.

A path is the files on the call stack where the work is done: the store's transaction (joined
with its caller's stack, since the write batcher commits in a task of its own) and the request
to the model endpoint. A step that returned into a router to be dispatched again would not be
on that stack; a chain of steps that each call the next is.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from tests.adapters.telegram_rig import serving
from tests.fakes.fixtures import fake_telegram  # noqa: F401  (pytest fixture)
from tests.fakes.telegram_server import FakeTelegram

pytestmark = pytest.mark.filterwarnings("ignore::telegram.warnings.PTBDeprecationWarning")

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("adapters", "bot", "compression", "scheduler")
MAX_FILES = 7
# Where each path ends: the function that does the work, by file.
STORE_CALLER = ("bot/store/write_batcher.py", "submit")
STORE = ("bot/store/sqlite/ingest.py", "ingest")
MODEL = ("bot/llm/client.py", "_request")
LANE = "bot/turns/lanes.py"
QUEUED = ("bot/ingress/lane_turns.py", "answer")
# Every step of the ingress, each called by the one before it (none returns to be routed).
CHAIN = [
    "allow_list.<locals>.step",
    "Gateway._language.<locals>.step",
    "settle.<locals>.step",
    "store.<locals>.step",
    "rule_authors.<locals>.step",
    "Gateway._commands.<locals>.step",
    "Gateway._files_and_compaction.<locals>.step",
    "Gateway._answer",
]


def _ours(frame: FrameType) -> str | None:
    path = Path(frame.f_code.co_filename)
    if not path.is_relative_to(ROOT):
        return None
    relative = path.relative_to(ROOT).as_posix()
    return relative if relative.startswith(tuple(f + "/" for f in FOLDERS)) else None


def _stack(frame: FrameType | None) -> list[str]:
    """Our files on the stack, outermost first, each once."""
    files: list[str] = []
    while frame is not None:
        ours = _ours(frame)
        if ours is not None and ours not in files:
            files.insert(0, ours)
        frame = frame.f_back
    return files


def _functions(frame: FrameType | None) -> list[str]:
    """The qualified names of our functions on the stack, outermost first."""
    names: list[str] = []
    while frame is not None:
        if _ours(frame) is not None:
            names.insert(0, frame.f_code.co_qualname)
        frame = frame.f_back
    return names


class StackRecorder:
    """Records the stack at the first call of each watched function."""

    def __init__(self, *watched: tuple[str, str]) -> None:
        self.watched = set(watched)
        self.stacks: dict[tuple[str, str], list[str]] = {}
        self.functions: dict[tuple[str, str], list[str]] = {}

    def __call__(self, frame: FrameType, event: str, _arg: Any) -> None:
        if event != "call":
            return
        key = (_ours(frame) or "", frame.f_code.co_name)
        if key in self.watched and key not in self.stacks:
            self.stacks[key] = _stack(frame)
            self.functions[key] = _functions(frame)

    @contextlib.contextmanager
    def recording(self) -> Iterator[None]:
        sys.setprofile(self)
        try:
            yield
        finally:
            sys.setprofile(None)


def _readme_path(title: str) -> list[str]:
    """The files listed under the README's drawing titled `title`, in order."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split(title, 1)[1].split("```", 2)[1]
    return re.findall(r"((?:adapters|bot|compression|scheduler)/[\w/]+\.py)", block)


async def test_an_update_reaches_its_row_and_the_model_across_at_most_7_files_each(
    tmp_path: Path,
    fake_telegram: FakeTelegram,  # noqa: F811  (the fixture imported above)
) -> None:
    tg = fake_telegram
    recorder = StackRecorder(STORE_CALLER, STORE, MODEL, QUEUED)
    async with serving(tmp_path, tg) as running:
        with recorder.recording():
            tg.push_update(tg.group_message("hello there", mention_bot=True))
            await running.answered()

    stored = recorder.stacks[STORE_CALLER] + [
        f for f in recorder.stacks[STORE] if f not in recorder.stacks[STORE_CALLER]
    ]
    model = recorder.stacks[MODEL]
    answered = model[model.index(LANE) :]
    assert stored[0].startswith("adapters/telegram") and stored[-1] == STORE[0]
    assert answered[-1] == MODEL[0]
    assert [f for f in recorder.functions[QUEUED] if f in CHAIN] == CHAIN
    assert len(stored) <= MAX_FILES, stored
    assert len(answered) <= MAX_FILES, answered
    # The README draws exactly these paths (the polling loop; the webhook is its twin).
    assert _readme_path("From a Telegram update to its stored row") == stored
    assert _readme_path("From the chat's lane to the model call") == answered
