"""Which parts of plan_lsp/ import which: every import between two layers (or top-level
modules), found in the source, and how it is made.

    .venv/bin/python scripts/layer_imports.py               # print the table
    .venv/bin/python scripts/layer_imports.py --write-docs  # put it into docs/architecture.md
    .venv/bin/python scripts/layer_imports.py --modules     # each edge's modules too
    .venv/bin/python scripts/layer_imports.py --circles     # import circles between modules

Kinds: `load` — at module level, so importing the one loads the other; `call` — inside a
function, loaded when first used; `type` — under `if TYPE_CHECKING:`, for annotations only.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "plan_lsp"
DOC = ROOT / "docs" / "architecture.md"
BEGIN = "<!-- layer-imports:begin -->"
END = "<!-- layer-imports:end -->"
KINDS = ("load", "call", "type")

Edge = tuple[str, str]


def part_of_path(path: Path) -> str:
    """The layer (a folder of plan_lsp/) or top-level module a file belongs to."""
    rel = path.relative_to(PACKAGE).parts
    if len(rel) == 1:
        return "plan_lsp" if rel[0] == "__init__.py" else rel[0].removesuffix(".py")
    return rel[0]


def part_of_module(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "plan_lsp":
        return None
    return parts[1] if len(parts) > 1 else "plan_lsp"


def _is_module(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _imports(tree: ast.Module) -> list[tuple[str, str]]:
    """(module, kind) for every absolute import in a module."""
    found: list[tuple[str, str]] = []

    def visit(node: ast.AST, kind: str) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                visit(child, "type")
            for child in node.orelse:
                visit(child, kind)
            return
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) and kind == "load":
            kind = "call"
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from plan_lsp import startup` imports the module plan_lsp.startup
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.append((sub if _is_module(sub) else node.module, kind))
        elif isinstance(node, ast.Import):
            found.extend((alias.name, kind) for alias in node.names)
        for inner in ast.iter_child_nodes(node):
            visit(inner, kind)

    visit(tree, "load")
    return found


def edges() -> dict[Edge, dict[str, set[str]]]:
    """(from, to) → kind → the importing files (relative to plan_lsp/)."""
    table: dict[Edge, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[:2] == ("demo", "sample"):
            continue  # the demo's sample project, not the server
        source = part_of_path(path)
        for module, kind in _imports(ast.parse(path.read_text(), str(path))):
            target = part_of_module(module)
            if target is not None and target != source:
                table[(source, target)][kind].add(str(rel))
    return table


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def module_graph() -> dict[str, set[str]]:
    """Module → the modules of plan_lsp/ it imports, every kind counted (a circle of
    annotations is still a circle: neither module can be read, moved or tested alone)."""
    graph: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[:2] == ("demo", "sample"):
            continue
        name = module_name(path)
        imported = {m for m, _ in _imports(ast.parse(path.read_text(), str(path)))}
        graph[name] = {m for m in imported if part_of_module(m) is not None and m != name}
    return graph


def circles(graph: dict[str, set[str]] | None = None) -> list[list[str]]:
    """Every set of modules that import each other in a circle (strongly connected
    components of more than one module, or a module importing itself), sorted."""
    graph = module_graph() if graph is None else graph
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in graph:
                continue
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1 or node in graph.get(node, ()):
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return sorted(found)


def markdown(with_modules: bool = False) -> str:
    rows = ["| from | imports | how |", "|---|---|---|"]
    for (source, target), kinds in sorted(edges().items()):
        how = ", ".join(k for k in KINDS if k in kinds)
        if with_modules:
            how += " — " + ", ".join(sorted(set().union(*kinds.values())))
        rows.append(f"| `{source}` | `{target}` | {how} |")
    return "\n".join(rows) + "\n"


def _with_table(doc: str, table: str) -> str:
    head, _, rest = doc.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n{table}{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="imports between plan_lsp's layers")
    parser.add_argument("--write-docs", action="store_true", help="update docs/architecture.md")
    parser.add_argument("--modules", action="store_true", help="name the importing files")
    parser.add_argument("--circles", action="store_true", help="list import circles")
    args = parser.parse_args(argv)
    if args.circles:
        found = circles()
        for circle in found:
            print(" ↔ ".join(circle))
        return 1 if found else 0
    table = markdown(args.modules)
    if not args.write_docs:
        sys.stdout.write(table)
        return 0
    doc = DOC.read_text()
    if BEGIN not in doc or END not in doc:
        print(f"{DOC} has no {BEGIN} … {END} block", file=sys.stderr)
        return 1
    DOC.write_text(_with_table(doc, table))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
