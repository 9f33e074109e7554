"""The sandbox package's lazy names: the imports the type checker reads (`if TYPE_CHECKING`,
each re-exported as itself) are the runtime's table (`_MODULES`), name for name and module
for module, and each name loads from its module."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import plan_lsp.policy.sandbox as sandbox


def _checked_imports() -> dict[str, str]:
    tree = ast.parse(Path(sandbox.__file__).read_text())
    block = next(node for node in tree.body if isinstance(node, ast.If))
    found: dict[str, str] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.module is not None
        for alias in node.names:
            assert alias.asname == alias.name, "a re-export names itself"
            found[alias.name] = node.module.removeprefix(f"{sandbox.__name__}.")
    return found


def test_the_type_checkers_names_are_the_lazy_table() -> None:
    assert _checked_imports() == sandbox._FROM


def test_each_name_loads_from_its_module() -> None:
    for name, module in sandbox._FROM.items():
        real = getattr(importlib.import_module(f"{sandbox.__name__}.{module}"), name)
        assert getattr(sandbox, name) is real
    assert all(hasattr(sandbox, name) for name in sandbox.__all__)
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = sandbox.no_such_name  # type: ignore[attr-defined]
