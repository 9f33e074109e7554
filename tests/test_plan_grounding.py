"""The grounded check of what a plan names, without a model, against a real workspace: a
table of plans, each with one planted problem (a missing file, a misspelled symbol, a step
nothing checks, a verification command plan mode would refuse), and a clean one that raises
nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from plan_lsp.plan import grounding
from plan_lsp.plan.grounding import ground_plan
from plan_lsp.server.plan_review import lookups

pytestmark = pytest.mark.process  # ripgrep looks the symbols up

CLEAN = """# Plan: load the config once

Context: `Runner.start` calls `load_config()` on every request.

1. In `src/app/main.py`, make `load_config()` keep its result.
2. Add a new module `src/app/cache.py` holding `ConfigCache`.
3. Mention it in docs/usage.md.

## Verification

```sh
grep -n load_config src/app/main.py
```

Look at `git diff --stat`.
"""
NO_VERIFICATION = """# Plan

1. Make `load_config()` keep its result; test it in `tests/test_main.py`.
2. Tidy the imports of `src/app/main.py`.
"""

# (plan, [(code, the flagged text)]): each plan is CLEAN with one thing planted.
TABLE: dict[str, tuple[str, list[tuple[str, str]]]] = {
    "clean": (CLEAN, []),
    "missing file": (
        CLEAN.replace("Mention it in docs/usage.md", "Mention it in docs/usage.rst"),
        [(grounding.CODE_PATH, "docs/usage.rst")],
    ),
    "missing file in a code span": (
        CLEAN.replace("In `src/app/main.py`", "In `src/app/mian.py`"),
        [(grounding.CODE_PATH, "src/app/mian.py")],
    ),
    "misspelled symbol": (
        CLEAN.replace("calls `load_config()`", "calls `load_confg()`"),
        [(grounding.CODE_SYMBOL, "load_confg()")],
    ),
    "misspelled dotted symbol": (
        CLEAN.replace("`Runner.start`", "`Runner.strat`"),
        [(grounding.CODE_SYMBOL, "Runner.strat")],
    ),
    "step without a check": (
        NO_VERIFICATION,
        [(grounding.CODE_UNCHECKED, "2. Tidy the imports of `src/app/main.py`.")],
    ),
    "verification command refused": (
        CLEAN.replace("grep -n load_config src/app/main.py", "rm -rf build"),
        [(grounding.CODE_COMMAND, "rm -rf build")],
    ),
}


@pytest.fixture(params=["ripgrep", "without ripgrep"])
def workspace(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Path:
    if request.param == "without ripgrep":
        monkeypatch.setattr(shutil, "which", lambda _name: None)
    (tmp_path / "src" / "app").mkdir(parents=True)
    (tmp_path / "src" / "app" / "main.py").write_text(
        "class Runner:\n    def start(self):\n        return load_config()\n\n\n"
        "def load_config():\n    return {}\n"
    )
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_main.py").write_text("from app.main import load_config\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "usage.md").write_text("# Usage\n")
    return tmp_path


@pytest.mark.parametrize("name", TABLE)
def test_the_grounded_check_finds_what_was_planted(workspace: Path, name: str) -> None:
    plan, expected = TABLE[name]
    lines = plan.splitlines()
    issues = ground_plan(plan, lookups(workspace, "classified"))
    found = [(i.code, lines[i.line][i.start_char : i.end_char]) for i in issues]
    assert found == expected
    assert all(i.severity == "warning" for i in issues)


def test_a_sandboxed_plan_shell_lets_tests_run(workspace: Path) -> None:
    plan = CLEAN.replace("grep -n load_config src/app/main.py", "pytest -q tests/test_main.py")
    assert ground_plan(plan, lookups(workspace, "sandboxed")) == []
    refused = ground_plan(plan, lookups(workspace, "classified"))
    assert [i.code for i in refused] == [grounding.CODE_COMMAND]
