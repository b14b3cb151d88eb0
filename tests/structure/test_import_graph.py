"""The layout's import rules (SPEC 1), read from the source with `ast`, TYPE_CHECKING included."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("bot", "adapters", "compression", "scheduler")


def module_name(path: Path) -> str:
    """The installed name: `bot/store/base.py` is `compactbot.bot.store.base`."""
    parts = ["compactbot", *path.relative_to(ROOT).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path, modules: set[str]) -> set[str]:
    """Our modules `path` imports, resolved to the longest known module name."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module_name(path) if path.name == "__init__.py" else module_name(path.parent)
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names = [f"{base}.{alias.name}" for alias in node.names] + [base]
        for name in names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name:
                found.add(name)
    return found


def import_graph() -> dict[str, set[str]]:
    files = [p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")]
    modules = {module_name(p) for p in files}
    graph = {module_name(p): imported_modules(p, modules) for p in files}
    for name, targets in graph.items():
        targets.discard(name)
        # A module importing its own package's __init__ is the package importing itself.
        targets.difference_update({t for t in targets if name.startswith(t + ".")})
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*stack[stack.index(target) :], target]
            if target not in state and (cycle := visit(target)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def top(name: str) -> str:
    """The design folder a module lives in: `compactbot.bot.x` is in `bot`."""
    return name.split(".")[1]


def test_our_modules_import_each_other_without_a_cycle() -> None:
    assert find_cycle(import_graph()) is None


def test_bot_imports_neither_adapters_nor_scheduler() -> None:
    upward = {
        (source, target)
        for source, targets in import_graph().items()
        if top(source) == "bot"
        for target in targets
        if top(target) in ("adapters", "scheduler")
    }
    assert upward == set()


def test_compression_imports_nothing_of_ours_outside_itself() -> None:
    outward = {
        (source, target)
        for source, targets in import_graph().items()
        if top(source) == "compression"
        for target in targets
        if top(target) != "compression"
    }
    assert outward == set()


def test_cycle_finder_sees_a_two_module_cycle() -> None:
    # The rule above is only as good as the finder: a known cycle must be reported.
    assert find_cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]
