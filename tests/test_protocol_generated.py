"""docs/protocol.md and client-vscode/src/protocol.generated.ts are what
scripts/gen_protocol.py makes of the contract's models today (the TypeScript through
json-schema-to-typescript, the extension's dev dependency): a model changed without
regenerating them fails here, with the diff."""

from __future__ import annotations

import difflib
import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from tests.needs import need

pytestmark = pytest.mark.process  # json2ts runs under node

ROOT = Path(__file__).resolve().parent.parent


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_protocol", ROOT / "scripts/gen_protocol.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    need(module.JSON2TS.exists(), "json2ts is not installed (`npm ci` in client-vscode/)")
    return module


def test_generated_files_are_current() -> None:
    stale = []
    for path, text in _generator().render().items():
        checked_in = path.read_text() if path.exists() else ""
        if checked_in != text:
            rel = str(path.relative_to(ROOT))
            diff = difflib.unified_diff(
                checked_in.splitlines(True), text.splitlines(True), rel, f"{rel} (generated)"
            )
            stale.append("".join(diff))
    assert not stale, (
        "regenerate with `.venv/bin/python scripts/gen_protocol.py`:\n" + "\n".join(stale)
    )


def test_generation_is_deterministic() -> None:
    gen = _generator()
    assert gen.render() == gen.render()


def test_every_update_kind_and_method_is_documented() -> None:
    from plan_lsp.protocol import methods, updates

    rendered = _generator().render()
    doc = next(text for path, text in rendered.items() if path.suffix == ".md")
    ts = next(text for path, text in rendered.items() if path.suffix == ".ts")
    for model in updates.UPDATE_MODELS:
        name = model.__name__
        assert f"`{name}`" in doc and f"export interface {name} " in ts
    for method in (*methods.METHODS, *methods.COMMANDS, *methods.CLIENT_REQUESTS):
        assert f"### `{method.name}`" in doc and f"'{method.name}':" in ts
