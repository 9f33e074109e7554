"""The import direction of docs/architecture.md, "Layers": a layer imports only the layers
below it."""

from __future__ import annotations

import ast
from pathlib import Path

import plan_lsp

LAYERS = ["server", "agent", "session", "providers", "tools", "policy", "plan"]
ROOT = Path(plan_lsp.__file__).parent


def _imports(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
    return names


def _layer(module: str) -> str | None:
    parts = module.split(".")
    if len(parts) >= 2 and parts[0] == "plan_lsp" and parts[1] in LAYERS:
        return parts[1]
    return None


def test_layers_import_only_downwards() -> None:
    violations = []
    for layer in LAYERS:
        for path in (ROOT / layer).rglob("*.py"):
            for imported in _imports(path):
                target = _layer(imported)
                if target is not None and LAYERS.index(target) < LAYERS.index(layer):
                    violations.append(f"{path.relative_to(ROOT)} imports {imported}")
                if layer != "server" and imported.split(".")[0] in ("pygls", "lsprotocol"):
                    violations.append(f"{path.relative_to(ROOT)} knows LSP ({imported})")
    assert violations == []


def test_plan_imports_nothing_of_ours_outside_plan() -> None:
    for path in (ROOT / "plan").rglob("*.py"):
        for imported in _imports(path):
            assert not imported.startswith("plan_lsp.") or imported.startswith("plan_lsp.plan")


def _module_level_imports(path: Path) -> set[str]:
    """Modules imported when `path` is imported: module-level statements, outside
    `if TYPE_CHECKING:` blocks (imports inside functions run later, on use)."""
    found: set[str] = set()
    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        for inner in ast.walk(node) if not isinstance(node, ast.FunctionDef | ast.ClassDef) else []:
            if isinstance(inner, ast.ImportFrom) and inner.module:
                found.add(inner.module)
            elif isinstance(inner, ast.Import):
                found.update(alias.name for alias in inner.names)
    return found


def test_no_import_circle_inside_server() -> None:
    """server/ modules import each other's types under TYPE_CHECKING only where the other
    imports them back; at run time the graph has no cycle."""
    modules = {
        f"plan_lsp.server.{p.stem}" if p.stem != "__init__" else "plan_lsp.server": p
        for p in (ROOT / "server").glob("*.py")
    }
    graph = {
        name: {m for m in _module_level_imports(path) if m in modules and m != name}
        for name, path in modules.items()
    }
    state: dict[str, int] = {}
    cycle: list[str] = []

    def visit(node: str, trail: list[str]) -> bool:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle.extend([*trail, node, nxt])
                return True
            if state.get(nxt) is None and visit(nxt, [*trail, node]):
                return True
        state[node] = 2
        return False

    for name in sorted(graph):
        if state.get(name) is None and visit(name, []):
            break
    assert cycle == [], " -> ".join(cycle)
