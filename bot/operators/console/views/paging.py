"""Pages of a long list: which slice to show and whether there is more on either side."""

from __future__ import annotations

from dataclasses import dataclass

MAX_PAGE = 100_000


@dataclass(frozen=True, slots=True)
class Page:
    number: int  # from 1
    size: int
    total: int | None = None  # None when counting would cost a scan

    @property
    def start(self) -> int:
        return (self.number - 1) * self.size

    @property
    def end(self) -> int:
        return self.start + self.size

    @property
    def previous(self) -> int | None:
        return self.number - 1 if self.number > 1 else None

    def next(self, has_more: bool) -> int | None:
        return self.number + 1 if has_more else None

    @property
    def pages(self) -> int | None:
        if self.total is None:
            return None
        return max(1, -(-self.total // self.size))


def page_number(raw: str | None) -> int:
    """A `?page=` value as a page number; anything else is page 1."""
    if raw is None or not raw.isascii() or not raw.isdigit():
        return 1
    return max(1, min(int(raw), MAX_PAGE))
