"""Files the project reads from the shared folder beside its checkout and never copies in: the
GateMem episodes and the Hermes speed chat (each cited where its results are reported)."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# COMPACTBOT_SHARED overrides where the shared folder is; otherwise it is found beside an
# ancestor of the checkout (../shared from the main checkout, ../../shared from a worktree).
ENV = "COMPACTBOT_SHARED"


def shared_path(relative: str) -> Path | None:
    """`relative` inside the shared folder, or None when it is not there."""
    roots = [Path(os.environ[ENV])] if os.environ.get(ENV) else []
    roots += [parent / "shared" for parent in REPO.parents]
    for root in roots:
        path = root / relative
        if path.exists():
            return path
    return None
