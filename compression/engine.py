"""The pluggable context-engine seam and how an engine is chosen by name (SPEC 6.10)."""

from __future__ import annotations

import importlib
import importlib.metadata
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

from compactbot.compression.result import CompressionResult

ENTRY_POINT_GROUP = "compactbot.context_engines"
BUILTIN_ENGINE = "compressor"
_BUILTIN_PATH = "compactbot.compression.compressor:ContextCompressor"


class UnknownEngineError(LookupError):
    """No context engine is registered under the configured name."""

    def __init__(self, name: str, available: Sequence[str] = ()) -> None:
        self.name = name
        self.available = tuple(available)
        known = ", ".join(self.available) or "none"
        super().__init__(f"unknown context engine {name!r} (available: {known})")


class ContextEngine(ABC):
    """What the runner needs from a context manager; constructed like `ContextCompressor`."""

    @property
    @abstractmethod
    def threshold_tokens(self) -> int: ...

    @property
    @abstractmethod
    def context_length(self) -> int: ...

    @property
    @abstractmethod
    def last_prompt_tokens(self) -> int: ...

    @property
    @abstractmethod
    def compression_count(self) -> int: ...

    @abstractmethod
    def should_compress(self, prompt_tokens: int | None = None) -> bool: ...

    @abstractmethod
    async def compress(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        pins: Sequence[str] = (),
        token_counts: Sequence[int] | None = None,
    ) -> CompressionResult: ...

    @abstractmethod
    def update_from_response(self, usage: Any) -> bool:
        """Record provider usage; True when this reading tripped the breaker."""

    # Optional hooks: an engine without per-session memory has nothing to do in them.
    def on_session_start(self, session_id: str) -> None:  # noqa: B027
        """A session begins or is resumed with this engine."""

    def on_session_end(self, session_id: str) -> None:  # noqa: B027
        """A session ended (`/new`, expiry); per-session memory must not leak into the next."""

    def on_session_reset(self) -> None:  # noqa: B027
        """Forget per-session state; the engine may be reused for another session."""


def load_engine(name: str) -> type[ContextEngine]:
    """The engine class registered as `name`, or named as `module:Class`."""
    if ":" in name:
        return _checked(name, _import_path(name))
    entry_points = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    for entry_point in entry_points:
        if entry_point.name == name:
            return _checked(name, entry_point.load())
    if name == BUILTIN_ENGINE:
        # Works from a source checkout whose package metadata was never installed.
        return _checked(name, _import_path(_BUILTIN_PATH))
    available = sorted({ep.name for ep in entry_points} | {BUILTIN_ENGINE})
    raise UnknownEngineError(name, available)


def _import_path(path: str) -> Any:
    module_name, _, attribute = path.partition(":")
    try:
        module = importlib.import_module(module_name)
        return getattr(module, attribute)
    except (ImportError, AttributeError) as exc:
        raise UnknownEngineError(path) from exc


def _checked(name: str, engine: Any) -> type[ContextEngine]:
    if isinstance(engine, type) and issubclass(engine, ContextEngine):
        return engine
    raise UnknownEngineError(name)


def check_summary_model_feasibility(
    main_threshold_tokens: int, summary_context_length: int
) -> tuple[int, str | None]:
    """The threshold to use and, if it had to be lowered to fit the summary model, a warning."""
    if summary_context_length <= 0:
        raise ValueError(f"summary_context_length must be positive, got {summary_context_length}")
    if summary_context_length >= main_threshold_tokens:
        return main_threshold_tokens, None
    warning = (
        f"The summary model's window ({summary_context_length:,} tokens) is smaller than the "
        f"compression threshold ({main_threshold_tokens:,}); the threshold was lowered to "
        f"{summary_context_length:,} tokens so compaction can still run."
    )
    return summary_context_length, warning
