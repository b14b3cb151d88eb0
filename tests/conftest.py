"""Shared fixtures. Tests never reach the internet: only 127.0.0.1 fakes."""

from __future__ import annotations

import os

# Local fakes only: never let a CI proxy setting route 127.0.0.1 traffic elsewhere.
os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
os.environ["no_proxy"] = os.environ["NO_PROXY"]
