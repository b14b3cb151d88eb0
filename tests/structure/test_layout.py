"""The installed layout (SPEC 1): four folders under the one `compactbot` namespace."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("bot", "adapters", "compression", "scheduler")


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_every_package_folder_is_installed_under_compactbot() -> None:
    setuptools = _pyproject()["tool"]["setuptools"]
    assert setuptools["package-dir"] == {f"compactbot.{f}": f for f in FOLDERS}
    on_disk = {
        "compactbot." + ".".join(init.parent.relative_to(ROOT).parts)
        for folder in FOLDERS
        for init in (ROOT / folder).rglob("__init__.py")
    }
    assert set(setuptools["packages"]) == on_disk


def test_no_top_level_name_but_compactbot_is_importable_outside_the_checkout(
    tmp_path: Path,
) -> None:
    # From another directory only what the install put on the path can be found.
    probe = (
        "import importlib.util as u, json; "
        f"print(json.dumps({{n: u.find_spec(n) is not None for n in {[*FOLDERS, 'compactbot']}}}))"
    )
    found = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout
    assert found.strip() == (
        '{"bot": false, "adapters": false, "compression": false, "scheduler": false, '
        '"compactbot": true}'
    )


def test_entry_points_name_only_compactbot_modules() -> None:
    project = _pyproject()["project"]
    targets = list(project["scripts"].values()) + [
        target for group in project["entry-points"].values() for target in group.values()
    ]
    assert targets and all(t.startswith("compactbot.") for t in targets)


MAX_LINES = 400
# bot/ shows its parts: a newcomer reads them from the folder names (issue 38).
MAX_MODULES_PER_BOT_FOLDER = 25


def test_no_product_file_is_over_400_lines() -> None:
    long = {
        path.relative_to(ROOT).as_posix(): lines
        for folder in FOLDERS
        for path in (ROOT / folder).rglob("*.py")
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, f"split these along their concepts: {long}"


def test_no_folder_of_bot_holds_more_than_25_modules() -> None:
    crowded = {
        folder.relative_to(ROOT).as_posix(): count
        for folder in [ROOT / "bot", *(ROOT / "bot").rglob("*/")]
        if folder.is_dir()
        and (count := sum(1 for p in folder.glob("*.py") if p.name != "__init__.py"))
        > MAX_MODULES_PER_BOT_FOLDER
    }
    assert not crowded, f"group these folders' modules by concept: {crowded}"
