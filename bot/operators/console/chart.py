"""The usage chart's geometry: stacked bars per day and purpose, drawn by a template as SVG.

Only numbers and labels are computed here; the template escapes every text it places, and the
chart needs nothing from outside the page (no script, no font, no CDN).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

WIDTH_PX = 760
HEIGHT_PX = 260
MARGIN_LEFT_PX = 64
MARGIN_RIGHT_PX = 12
MARGIN_TOP_PX = 12
MARGIN_BOTTOM_PX = 40
BAR_GAP_RATIO = 0.2
Y_TICKS = 4
MAX_X_LABELS = 8


@dataclass(frozen=True, slots=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    day: str
    purpose: str
    tokens: int


@dataclass(frozen=True, slots=True)
class Tick:
    at: float  # pixels
    label: str


@dataclass(frozen=True, slots=True)
class Chart:
    width: int
    height: int
    left: int
    bottom: float  # y of the x axis
    right: float
    bars: list[Bar]
    y_ticks: list[Tick]
    x_ticks: list[Tick]
    purposes: list[str]
    peak: int


def stacked_bars(days: Sequence[str], tokens: Mapping[str, Mapping[str, int]]) -> Chart:
    """One bar per day, one segment per purpose (in the order of `tokens`)."""
    purposes = list(tokens)
    totals = [sum(tokens[p].get(day, 0) for p in purposes) for day in days]
    peak = max(totals, default=0)
    scale_top = nice_ceiling(peak)
    plot_w = WIDTH_PX - MARGIN_LEFT_PX - MARGIN_RIGHT_PX
    plot_h = HEIGHT_PX - MARGIN_TOP_PX - MARGIN_BOTTOM_PX
    bottom = float(MARGIN_TOP_PX + plot_h)
    slot = plot_w / max(len(days), 1)
    bar_w = slot * (1 - BAR_GAP_RATIO)
    bars: list[Bar] = []
    for i, day in enumerate(days):
        x = MARGIN_LEFT_PX + i * slot + (slot - bar_w) / 2
        y = bottom
        for purpose in purposes:
            value = tokens[purpose].get(day, 0)
            if value <= 0:
                continue
            height = plot_h * value / scale_top
            y -= height
            bars.append(
                Bar(
                    round(x, 1), round(y, 1), round(bar_w, 1), round(height, 1), day, purpose, value
                )
            )
    y_ticks = [
        Tick(round(bottom - plot_h * n / Y_TICKS, 1), compact_number(scale_top * n // Y_TICKS))
        for n in range(Y_TICKS + 1)
    ]
    step = max(1, -(-len(days) // MAX_X_LABELS))
    x_ticks = [
        Tick(round(MARGIN_LEFT_PX + i * slot + slot / 2, 1), day[5:])
        for i, day in enumerate(days)
        if i % step == 0
    ]
    return Chart(
        width=WIDTH_PX,
        height=HEIGHT_PX,
        left=MARGIN_LEFT_PX,
        bottom=bottom,
        right=float(WIDTH_PX - MARGIN_RIGHT_PX),
        bars=bars,
        y_ticks=y_ticks,
        x_ticks=x_ticks,
        purposes=purposes,
        peak=peak,
    )


def nice_ceiling(value: int) -> int:
    """The smallest 1, 2 or 5 × 10^n at or above `value` (at least 1): round axis labels."""
    if value <= 1:
        return 1
    magnitude = 1
    while magnitude * 10 <= value:
        magnitude *= 10
    for factor in (1, 2, 5, 10):
        if factor * magnitude >= value:
            return factor * magnitude
    return 10 * magnitude


def compact_number(value: int) -> str:
    """12_500 -> "12.5k", 3_000_000 -> "3M": axis labels that fit the margin."""
    for size, suffix in ((1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")):
        if value >= size:
            text = f"{value / size:.1f}".rstrip("0").rstrip(".")
            return text + suffix
    return str(value)
