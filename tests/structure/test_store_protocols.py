"""The storage contract stays small protocols that consumers name (SPEC 4), read with `ast`."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("bot", "adapters", "compression", "scheduler")
STORE_FOLDER = ROOT / "bot" / "store"
MAX_PROTOCOL_METHODS = 12
# The composition root (App builds the parts, Services hands them out) and the backends'
# factory: the only modules that may name the whole `Store`.
WHOLE_STORE_MODULES = frozenset({"bot/app.py", "bot/services.py", "bot/store/backends.py"})
MAX_WHOLE_STORE_MODULES = 3
# Product code reaches the store through `Services`' typed views (`services.pins`, …); only the
# composition root and `Services` itself read `services.store`, the whole store.
PRODUCT_PACKAGES = ("bot", "adapters", "scheduler")
SERVICES_STORE_MODULES = frozenset({"bot/app.py", "bot/services.py"})


@dataclass(frozen=True, slots=True)
class ProtocolClass:
    module: str
    methods: frozenset[str]  # declared in its own body
    bases: tuple[str, ...]  # its other bases, by name


def _base_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Subscript):  # Protocol[T]
        node = node.value
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def store_protocols(folder: Path = STORE_FOLDER) -> dict[str, ProtocolClass]:
    """Every `Protocol` class defined in the store's modules, by name."""
    found: dict[str, ProtocolClass] = {}
    for path in sorted([*folder.glob("*.py"), *(folder / "protocols").glob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            bases = [_base_name(b) for b in node.bases]
            if "Protocol" not in bases:
                continue
            methods = frozenset(
                f.name for f in node.body if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
            )
            others = tuple(b for b in bases if b is not None and b != "Protocol")
            found[node.name] = ProtocolClass(path.name, methods, others)
    return found


def all_methods(name: str, protocols: dict[str, ProtocolClass]) -> set[str]:
    """The protocol's methods with those of the store protocols it extends."""
    protocol = protocols[name]
    methods = set(protocol.methods)
    for base in protocol.bases:
        if base in protocols:
            methods |= all_methods(base, protocols)
    return methods


def _annotations(tree: ast.AST) -> Iterator[ast.expr]:
    for node in ast.walk(tree):
        if isinstance(node, ast.arg | ast.AnnAssign) and node.annotation is not None:
            yield node.annotation
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns:
            yield node.returns


def whole_store_lines(path: Path) -> list[int]:
    """Lines where the module imports `Store` or names it (annotation, base class, cast, …)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes: list[ast.AST] = list(ast.walk(tree))
    for annotation in _annotations(tree):
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            # A quoted annotation is code too: "Store | None".
            quoted = ast.parse(annotation.value, mode="eval")
            nodes += [ast.copy_location(n, annotation) for n in ast.walk(quoted)]
    return sorted({node.lineno for node in nodes if _names_store(node)})


def _names_store(node: ast.AST) -> bool:
    if isinstance(node, ast.ImportFrom):
        return any(alias.name == "Store" for alias in node.names)
    if isinstance(node, ast.Name):
        return node.id == "Store"
    return isinstance(node, ast.Attribute) and node.attr == "Store"


def _is_services(node: ast.expr) -> bool:
    """`services`, `self.services`, `self._services`, `ctx.host.services`, `app.services`."""
    if isinstance(node, ast.Name):
        return node.id.lstrip("_") == "services"
    return isinstance(node, ast.Attribute) and node.attr.lstrip("_") == "services"


def services_store_lines(source: str) -> list[int]:
    """Lines where the code reads the `store` attribute of a `services` object."""
    return sorted(
        {
            node.lineno
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Attribute) and node.attr == "store" and _is_services(node.value)
        }
    )


def _modules() -> dict[str, Path]:
    return {
        path.relative_to(ROOT).as_posix(): path
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def test_no_storage_protocol_has_more_than_twelve_methods() -> None:
    protocols = store_protocols()
    assert "Store" in protocols and "SessionStore" in protocols  # the scan sees the store
    # A protocol that declares nothing only combines others (`Store`, `ConsoleRecords`); each
    # part is held to the limit on its own.
    too_big = {
        f"{protocol.module}: {name}": len(all_methods(name, protocols))
        for name, protocol in protocols.items()
        if protocol.methods and len(all_methods(name, protocols)) > MAX_PROTOCOL_METHODS
    }
    assert not too_big, f"protocols over {MAX_PROTOCOL_METHODS} methods: {too_big}"


def test_only_the_composition_root_and_the_factory_name_the_whole_store() -> None:
    naming = {
        module: lines
        for module, path in _modules().items()
        if module not in WHOLE_STORE_MODULES and (lines := whole_store_lines(path))
    }
    assert not naming, f"name the protocols you use, not the whole Store (module: lines): {naming}"


def test_every_module_allowed_the_whole_store_names_it() -> None:
    # An entry nobody needs any more would let the next module in unnoticed.
    assert len(WHOLE_STORE_MODULES) <= MAX_WHOLE_STORE_MODULES
    modules = _modules()
    assert all(whole_store_lines(modules[m]) for m in WHOLE_STORE_MODULES)


def test_the_scan_finds_every_way_to_reach_the_whole_store_through_services() -> None:
    source = """
services.store.add_pin(key, text, None)
store = self.services.store
rows = await ctx.host.services.store.usage(key, day)
chats = await self._services.store.list_chats()
letters = app.services.store.list_dead_letters()
pins = services.pins.list_pins(key)
rows = deps.store.search(key, query)
self._store = store
"""
    assert services_store_lines(source) == [2, 3, 4, 5, 6]


def test_product_modules_use_the_services_views_not_the_whole_store() -> None:
    reaching = {
        module: lines
        for module, path in _modules().items()
        if module.split("/")[0] in PRODUCT_PACKAGES
        and module not in SERVICES_STORE_MODULES
        and (lines := services_store_lines(path.read_text(encoding="utf-8")))
    }
    assert not reaching, (
        f"use the protocol view you need (services.pins, services.sessions, …), not "
        f"services.store (module: lines): {reaching}"
    )
