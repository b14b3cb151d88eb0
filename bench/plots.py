"""Small PNG plots for RESULTS.md (matplotlib, Agg backend, no display needed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

from bench.cost import PRIMARY_WINDOW, Ledger
from bench.retention import ROUNDS, Results
from bench.retention_report import share
from compactbot.compression import CompressorConfig

DPI = 80  # small files: these are committed


def context_tokens(ledgers: Mapping[str, Ledger], path: Path) -> None:
    """Context tokens over the long chat, compactions marked; no compression on a log inset."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 5.5), dpi=DPI, sharex=True)
    ours = ledgers["ours"]
    for name, ledger in ledgers.items():
        xs, ys = zip(*ledger.trace, strict=True)  # two points at a compaction: the drop
        if name != "none":
            top.plot(xs, ys, label=name, linewidth=1)
        bottom.plot(xs, ys, label=name, linewidth=1)
    marks = [i for i, _ in _last_per_index(ours.trace) if i in set(ours.compactions)]
    top.scatter(
        marks,
        [dict(_last_per_index(ours.trace))[i] for i in marks],
        marker="v",
        color="black",
        s=14,
        zorder=3,
        label="compaction (ours)",
    )
    top.axhline(PRIMARY_WINDOW, color="red", linewidth=0.8, linestyle=":", label="window")
    trigger = CompressorConfig(context_length=PRIMARY_WINDOW).threshold_tokens
    top.axhline(trigger, color="gray", linewidth=0.8, linestyle="--", label="trigger")
    top.set_ylabel("tokens in context")
    top.set_title(
        f"Context size over a {len(ours.trace) and ours.trace[-1][0]:,}-message chat "
        f"({PRIMARY_WINDOW // 1000}K window)"
    )
    top.legend(fontsize=7, loc="upper left")
    bottom.set_yscale("log")
    bottom.axhline(PRIMARY_WINDOW, color="red", linewidth=0.8, linestyle=":")
    bottom.set_ylabel("tokens (log)")
    bottom.set_xlabel("message index")
    bottom.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _last_per_index(trace: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """One point per message: the size after any compaction at that message."""
    out: dict[int, int] = {}
    for index, tokens in trace:
        out[index] = tokens
    return sorted(out.items())


def retention(results: Results, path: Path) -> None:
    """Share of planted items in the context (solid) and through recall (dashed) after k
    rounds, per window, per strategy."""
    path.parent.mkdir(parents=True, exist_ok=True)
    windows = sorted(results.runs)
    fig, axes = plt.subplots(1, len(windows), figsize=(4 * len(windows), 4), dpi=DPI, sharey=True)
    ks = list(range(1, ROUNDS + 1))
    for ax, window in zip(axes if len(windows) > 1 else [axes], windows, strict=True):
        runs = results.runs[window]
        for colour, name in enumerate(dict.fromkeys(r.strategy for r in runs)):
            mine = [r for r in runs if r.strategy == name]
            shown = [100 * share(mine, k)[0] for k in ks]
            found = [100 * share(mine, k, recall=True)[0] for k in ks]
            ax.plot(ks, shown, "-", color=f"C{colour}", label=name, linewidth=1.2)
            ax.plot(ks, found, "--", color=f"C{colour}", linewidth=0.9)
        ax.set_title(f"{window // 1024}K window", fontsize=9)
        ax.set_ylim(-3, 103)
        ax.set_xlabel("k (rounds lived through)", fontsize=8)
        ax.grid(alpha=0.3)
    first = axes[0] if len(windows) > 1 else axes
    first.set_ylabel("% of items (solid: context, dashed: recall)", fontsize=8)
    handles, labels = first.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8)
    fig.tight_layout(rect=(0, 0.14, 1, 1))
    fig.savefig(path)
    plt.close(fig)
