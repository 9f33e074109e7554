"""The import direction of docs/architecture.md, "Layers": a layer imports only the layers
below it."""

from __future__ import annotations

import ast
from pathlib import Path

import plan_lsp

# Front-ends translate their protocol to the session core; none imports another.
FRONT_ENDS = ["server", "acp"]
LAYERS = ["core", "agent", "session", "providers", "tools", "policy", "plan"]
# The wire contract: its types are the vocabulary of every layer, so any may import it, and
# it imports nothing of ours.
CONTRACT = "protocol"
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
    if len(parts) >= 2 and parts[0] == "plan_lsp" and parts[1] in FRONT_ENDS + LAYERS:
        return parts[1]
    return None


def _rank(layer: str) -> int:
    return 0 if layer in FRONT_ENDS else 1 + LAYERS.index(layer)


def test_layers_import_only_downwards() -> None:
    violations = []
    for layer in FRONT_ENDS + LAYERS:
        for path in (ROOT / layer).rglob("*.py"):
            for imported in _imports(path):
                target = _layer(imported)
                if target is not None and target != layer and _rank(target) <= _rank(layer):
                    violations.append(f"{path.relative_to(ROOT)} imports {imported}")
                if layer != "server" and imported.split(".")[0] in ("pygls", "lsprotocol"):
                    violations.append(f"{path.relative_to(ROOT)} knows LSP ({imported})")
                if layer != "acp" and imported.split(".")[0] == "acp":
                    violations.append(f"{path.relative_to(ROOT)} knows ACP ({imported})")
    assert violations == []


def test_plan_imports_nothing_of_ours_outside_plan() -> None:
    for path in (ROOT / "plan").rglob("*.py"):
        for imported in _imports(path):
            assert not imported.startswith("plan_lsp.") or imported.startswith("plan_lsp.plan")


def test_the_contract_imports_nothing_of_ours() -> None:
    found = [
        f"{path.relative_to(ROOT)} imports {imported}"
        for path in (ROOT / CONTRACT).rglob("*.py")
        for imported in _imports(path)
        if imported.split(".")[0] == "plan_lsp" and not imported.startswith(f"plan_lsp.{CONTRACT}")
    ]
    assert found == []


def test_the_core_and_both_front_ends_speak_the_contract() -> None:
    """The core emits the contract's updates and each front-end maps them to its wire: all
    three import it (and no front-end reaches the contract through another layer)."""
    for layer in ("core", *FRONT_ENDS):
        imported = {m for p in (ROOT / layer).rglob("*.py") for m in _imports(p)}
        assert any(m.startswith(f"plan_lsp.{CONTRACT}.") for m in imported), layer
