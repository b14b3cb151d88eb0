"""Small PNG plots for RESULTS.md (matplotlib, Agg backend, no display needed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

from bench.cost import PRIMARY_WINDOW, Ledger
from bench.drive import Run
from bench.planted_items import KINDS
from bench.quality import K_MAX, LOSSY_P, NONE
from bench.verdict_tallies import survival
from compactbot.compression import CompressorConfig

DPI = 80  # small files: these are committed
STYLES = ("-", "--", "-.", ":", "-", "--", "-.")


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


def retention(grouped: Mapping[str, Sequence[Run]], path: Path) -> None:
    """Share of items kept vs. compactions lived through, per kind and overall."""
    path.parent.mkdir(parents=True, exist_ok=True)
    panels = [("all kinds", None), *((kind, [kind]) for kind in KINDS)]
    fig, axes = plt.subplots(2, 4, figsize=(11, 5.5), dpi=DPI, sharex=True, sharey=True)
    ks = list(range(1, K_MAX + 1))
    for ax, (title, kinds) in zip(axes.flat, panels, strict=True):
        for style, (name, runs) in zip(STYLES, grouped.items(), strict=False):
            if name == NONE:
                continue
            ys = [100 * survival(runs, k, kinds)[0] for k in ks]
            ax.plot(ks, ys, style, label=name, linewidth=1.2)
        if kinds is None:
            naive = [100 * (1 - LOSSY_P) ** k for k in ks]
            ax.plot(ks, naive, color="gray", linewidth=0.8, linestyle=":", label="0.9^k")
        ax.set_title(title, fontsize=9)
        ax.set_ylim(-3, 103)
        ax.grid(alpha=0.3)
    for ax in axes[1]:
        ax.set_xlabel("k (compactions lived through)", fontsize=8)
    for ax in axes[:, 0]:
        ax.set_ylabel("% kept", fontsize=8)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.savefig(path)
    plt.close(fig)
