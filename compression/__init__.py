"""The compression engine: message lists in, message lists out (SPEC 6.1).

Importable on its own; it imports nothing from `bot/`, `adapters/` or `scheduler/`.
"""

from __future__ import annotations

from compactbot.compression.compressor import ContextCompressor
from compactbot.compression.engine import (
    ContextEngine,
    UnknownEngineError,
    check_summary_model_feasibility,
    load_engine,
)
from compactbot.compression.hygiene import hygiene_reason
from compactbot.compression.memory import Memory, MemoryEntry, MessageSource
from compactbot.compression.result import CompressionResult, Outcome
from compactbot.compression.state import CompressorState
from compactbot.compression.summarizer import (
    Summarizer,
    SummaryAuthError,
    SummaryError,
    SummaryNetworkError,
    SummaryRequest,
    SummaryTransientError,
)
from compactbot.compression.template import SUMMARY_END_MARKER, SUMMARY_PREFIX
from compactbot.compression.thresholds import CompressorConfig, compute_threshold_tokens

__all__ = [
    "SUMMARY_END_MARKER",
    "SUMMARY_PREFIX",
    "CompressionResult",
    "CompressorConfig",
    "CompressorState",
    "ContextCompressor",
    "ContextEngine",
    "Memory",
    "MemoryEntry",
    "MessageSource",
    "Outcome",
    "Summarizer",
    "SummaryAuthError",
    "SummaryError",
    "SummaryNetworkError",
    "SummaryRequest",
    "SummaryTransientError",
    "UnknownEngineError",
    "check_summary_model_feasibility",
    "compute_threshold_tokens",
    "hygiene_reason",
    "load_engine",
]
