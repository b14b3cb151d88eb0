"""The chat Hermes Agent's `compress()` was timed on, and the calibration pass that converts a
time measured here into Hermes' time on the same machine (`reference/hermes-speed.md`).

The generator is `reference/hermes_speed_chat.py` in the shared folder, imported from there by
path (never copied), so K below holds for exactly the chat we time.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from collections.abc import Mapping, Sequence
from functools import cache
from types import ModuleType
from typing import Any

from bench.shared_files import shared_path

REFERENCE = "reference/hermes_speed_chat.py"
# Hermes' compress() time divided by the calibration pass's, per chat size (hermes-speed.md).
HERMES_K = {1_000: 9.72, 5_000: 12.11, 20_000: 14.12, 50_000: 14.48}
SIZES = tuple(HERMES_K)


@cache
def reference() -> ModuleType | None:
    """The shared generator module, or None when the shared folder is not beside us."""
    path = shared_path(REFERENCE)
    if path is None:
        return None
    spec = importlib.util.spec_from_file_location("hermes_speed_chat", path)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def hermes_chat(size: int) -> list[dict[str, Any]]:
    """Exactly `size` messages of the reference chat (system prompt first, ends on a user)."""
    module = reference()
    if module is None:
        raise FileNotFoundError(f"{REFERENCE} is not in the shared folder")
    return list(module.build_messages(size))


def fixed_summary() -> str:
    """The fixed 2,000-character summary both stubs returned when Hermes was timed."""
    module = reference()
    if module is None:
        raise FileNotFoundError(f"{REFERENCE} is not in the shared folder")
    return str(module.fixed_summary())


def calibration(messages: Sequence[Mapping[str, Any]]) -> int:
    """The cost shape of Hermes' rough token estimate (hermes-speed.md, verbatim)."""
    total = 0
    for m in messages:
        total += len(str({k: v for k, v in m.items()}))  # the reference's own form
    return total // 4


def machine_speed_ms(repeats: int = 20) -> float | None:
    """The calibration pass over the 1,000-message chat, best of `repeats`: how fast this
    shared machine is at the moment, for reading the absolute times of a run."""
    if reference() is None:
        return None
    messages = hermes_chat(1_000)
    best = float("inf")
    for _ in range(repeats):
        begin = time.perf_counter()
        calibration(messages)
        best = min(best, time.perf_counter() - begin)
    return best * 1000
