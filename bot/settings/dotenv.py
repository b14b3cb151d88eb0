"""Read a `.env` file (KEY=VALUE lines) so secrets can live outside the shell and out of git."""

from __future__ import annotations

from pathlib import Path

DEFAULT_DOTENV = Path(".env")


def read_dotenv(path: Path = DEFAULT_DOTENV) -> dict[str, str]:
    """Variables from `path`; a missing file is no variables. Values are never logged."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    values: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key.strip()] = value
    return values
