from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from compactbot.compression import CompressorConfig, ContextCompressor
from compactbot.compression.engine import (
    ContextEngine,
    UnknownEngineError,
    check_summary_model_feasibility,
    load_engine,
)

ENGINE_SOURCE = textwrap.dedent(
    """
    from compactbot.compression.compressor import ContextCompressor

    class EchoEngine(ContextCompressor):
        '''A second engine, only for the entry-point tests.'''
    """
)


@pytest.fixture
def installed_second_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A distribution on sys.path registering `echo` in the engines entry-point group."""
    (tmp_path / "echo_engine_mod.py").write_text(ENGINE_SOURCE)
    dist = tmp_path / "echo_engine-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: echo-engine\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[compactbot.context_engines]\necho = echo_engine_mod:EchoEngine\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "echo"
    sys.modules.pop("echo_engine_mod", None)


def test_builtin_engine_is_the_compressor() -> None:
    assert load_engine("compressor") is ContextCompressor
    assert issubclass(ContextCompressor, ContextEngine)


def test_registered_engine_is_selected_only_when_named(installed_second_engine: str) -> None:
    assert load_engine("compressor") is ContextCompressor
    engine = load_engine(installed_second_engine)
    assert engine.__name__ == "EchoEngine"
    assert engine is not ContextCompressor


def test_unknown_engine_names_itself_and_the_known_ones(installed_second_engine: str) -> None:
    with pytest.raises(UnknownEngineError, match="'nope'") as caught:
        load_engine("nope")
    assert "compressor" in caught.value.available and "echo" in caught.value.available


def test_engine_by_module_path() -> None:
    assert load_engine("compactbot.compression.compressor:ContextCompressor") is ContextCompressor


def test_module_path_to_a_non_engine_is_rejected() -> None:
    with pytest.raises(UnknownEngineError):
        load_engine("compactbot.compression.thresholds:CompressorConfig")
    with pytest.raises(UnknownEngineError):
        load_engine("compactbot.compression.nowhere:Thing")


def test_engine_exposes_token_fields() -> None:
    engine = ContextCompressor(CompressorConfig(200_000))
    assert (engine.context_length, engine.threshold_tokens) == (200_000, 100_000)
    assert (engine.last_prompt_tokens, engine.compression_count) == (0, 0)


def test_session_reset_forgets_state() -> None:
    engine = ContextCompressor(CompressorConfig(200_000))
    engine.on_session_start("s1")
    engine.update_from_response({"prompt_tokens": 150_000})
    engine.on_session_end("s1")
    assert engine.last_prompt_tokens == 0


def test_feasible_summary_model_keeps_threshold() -> None:
    assert check_summary_model_feasibility(100_000, 128_000) == (100_000, None)


def test_small_summary_model_lowers_threshold_with_warning() -> None:
    threshold, warning = check_summary_model_feasibility(100_000, 32_000)
    assert threshold == 32_000
    assert warning is not None and "32,000" in warning


def test_feasibility_rejects_non_positive_window() -> None:
    with pytest.raises(ValueError, match="summary_context_length"):
        check_summary_model_feasibility(100_000, 0)
