"""docs/architecture.md's table of imports between layers is the code's: an import added
between two parts that had none (or the last one removed) fails here until the table is
regenerated (`scripts/layer_imports.py --write-docs`) and the picture above it checked."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def _script() -> ModuleType:
    path = ROOT / "scripts" / "layer_imports.py"
    spec = importlib.util.spec_from_file_location("layer_imports", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_table_in_the_docs_is_the_code() -> None:
    script = _script()
    doc = (ROOT / "docs" / "architecture.md").read_text()
    _, _, rest = doc.partition(script.BEGIN)
    checked_in, _, _ = rest.partition(script.END)
    assert checked_in.strip() == script.markdown().strip(), (
        "run `.venv/bin/python scripts/layer_imports.py --write-docs` and check the picture"
    )


def test_the_picture_draws_no_import_the_code_lacks() -> None:
    """Each arrow of the layer picture (`a/ ──► b/`, on one line) is a real import."""
    script = _script()
    edges = set(script.edges())
    doc = (ROOT / "docs" / "architecture.md").read_text()
    picture = doc.split("## Layers", 1)[1].split("```")[1]
    drawn = re.findall(r"([\w.]+)/?\s*─+►\s*(?=([\w.]+))", picture)
    assert drawn, "no arrow found in the picture"
    for source, target in drawn:
        pair = (source.removesuffix(".py"), target.removesuffix(".py"))
        assert pair in edges, f"the picture draws {pair[0]} → {pair[1]}, which no import makes"


def test_policy_and_plan_import_no_other_layer() -> None:
    """What the text says: providers/ and plan/ import no other layer, policy/ only the wire
    contract (protocol/, its mode vocabulary), and protocol/ none."""
    edges = set(_script().edges())
    assert not {"providers", "plan", "protocol"} & {source for source, _ in edges}
    assert {target for source, target in edges if source == "policy"} <= {"protocol"}


def test_no_import_circle_anywhere() -> None:
    """No two modules of the package import each other, directly or round a circle —
    imports for annotations only (`if TYPE_CHECKING:`) and inside functions included."""
    assert _script().circles() == [], (
        "import circles (`.venv/bin/python scripts/layer_imports.py --circles`)"
    )


def test_the_circle_finder_finds_circles() -> None:
    circles = _script().circles
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"a"}}) == [["a"]]
    assert circles({"a": {"b"}, "b": set()}) == []
