"""When compression fires and how much room the tail and the summary get (SPEC 6.2)."""

from __future__ import annotations

from dataclasses import dataclass

# Hermes' MINIMUM_CONTEXT_LENGTH: below this a trigger fires too often to be useful.
MIN_THRESHOLD_TOKENS = 64_000
# When the 64K floor swallows the whole window, trigger here instead (Hermes #14690).
FLOOR_SWALLOWED_RATIO = 0.85
TARGET_RATIO_MIN = 0.10
TARGET_RATIO_MAX = 0.80
# Max summary tokens = min(5 % of the window, 10,000): a summary larger than this stops paying.
SUMMARY_WINDOW_RATIO = 0.05
SUMMARY_TOKENS_CEILING = 10_000
SUMMARY_TOKENS_FLOOR = 2_000
# ... but never more than this share of the window: on a 4K window a 2,000-token summary
# left too little for the tail, the tools and one search result (requests over the window).
SUMMARY_FLOOR_WINDOW_RATIO = 0.25
SUMMARY_SHARE_OF_MIDDLE = 0.20
# The rendered memory grows past the summary budget for what must be shown (pins, rules,
# preferences, open action items), up to this share of the window (SPEC 6.11).
MEMORY_CAP_RATIO = 0.10


def effective_window(context_length: int, max_tokens: int | None = None) -> int:
    """The input window left once the reply's `max_tokens` is reserved (Hermes #43547)."""
    if max_tokens is None or max_tokens <= 0 or max_tokens >= context_length:
        return context_length
    return context_length - max_tokens


def compute_threshold_tokens(
    context_length: int, threshold: float, max_tokens: int | None = None
) -> int:
    """Prompt tokens at which automatic compression fires."""
    window = effective_window(context_length, max_tokens)
    tokens = max(int(window * threshold), MIN_THRESHOLD_TOKENS)
    if tokens >= window:
        tokens = max(1, min(int(window * FLOOR_SWALLOWED_RATIO), window - 1))
    return tokens


@dataclass(frozen=True, slots=True)
class CompressorConfig:
    """Tunables of one compressor; derived budgets are properties so they never drift."""

    context_length: int
    threshold: float = 0.50
    target_ratio: float = 0.20
    protect_first_n: int = 3
    protect_last_n: int = 20
    max_tokens: int | None = None
    abort_on_summary_failure: bool = False
    # Lowered when the summary model's window is smaller than the threshold (SPEC 6.10).
    threshold_tokens_cap: int | None = None
    model: str | None = None
    language: str | None = None  # the chat's language for summaries; None: the turns' own
    memory_cap_ratio: float = MEMORY_CAP_RATIO

    def __post_init__(self) -> None:
        if self.context_length <= 0:
            raise ValueError(f"context_length must be positive, got {self.context_length}")
        if not 0 < self.threshold <= 1:
            raise ValueError(f"threshold must be in (0, 1], got {self.threshold}")
        if self.protect_first_n < 0:
            raise ValueError(f"protect_first_n must be >= 0, got {self.protect_first_n}")
        if self.protect_last_n < 0:
            raise ValueError(f"protect_last_n must be >= 0, got {self.protect_last_n}")
        if not 0 < self.memory_cap_ratio <= 1:
            raise ValueError(f"memory_cap_ratio must be in (0, 1], got {self.memory_cap_ratio}")
        if self.threshold_tokens_cap is not None and self.threshold_tokens_cap <= 0:
            raise ValueError(
                f"threshold_tokens_cap must be positive, got {self.threshold_tokens_cap}"
            )

    @property
    def threshold_tokens(self) -> int:
        tokens = compute_threshold_tokens(self.context_length, self.threshold, self.max_tokens)
        if self.threshold_tokens_cap is not None:
            tokens = min(tokens, self.threshold_tokens_cap)
        return tokens

    @property
    def clamped_target_ratio(self) -> float:
        return min(max(self.target_ratio, TARGET_RATIO_MIN), TARGET_RATIO_MAX)

    @property
    def tail_token_budget(self) -> int:
        return int(self.threshold_tokens * self.clamped_target_ratio)

    @property
    def max_summary_tokens(self) -> int:
        return min(int(self.context_length * SUMMARY_WINDOW_RATIO), SUMMARY_TOKENS_CEILING)

    @property
    def summary_floor_tokens(self) -> int:
        """2,000 tokens (SPEC 6.9), or a quarter of a window smaller than 8,000."""
        window = effective_window(self.context_length, self.max_tokens)
        return min(SUMMARY_TOKENS_FLOOR, int(window * SUMMARY_FLOOR_WINDOW_RATIO))

    def summary_budget(self, middle_tokens: int) -> int:
        """Target summary size; the floor wins on small windows (SPEC 6.9)."""
        share = int(middle_tokens * SUMMARY_SHARE_OF_MIDDLE)
        return max(self.summary_floor_tokens, min(share, self.max_summary_tokens))

    @property
    def memory_cap_tokens(self) -> int:
        """The most the rendered memory may take for its must-show entries; the summary
        budget's 2,000 floor wins on small windows."""
        return max(self.summary_floor_tokens, int(self.context_length * self.memory_cap_ratio))

    def render_budget(self, span_tokens: int, must_show_tokens: int) -> int:
        """The rendered memory's budget: the summary budget, or what the must-show entries
        need, up to the cap (SPEC 6.11)."""
        return max(self.summary_budget(span_tokens), min(must_show_tokens, self.memory_cap_tokens))
