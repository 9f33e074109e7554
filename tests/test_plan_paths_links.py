"""A plan file with a second name (a hard link) is never a round's plan file: editors (VS
Code, Vim) save a file in place, so writing the plan would write the other name's file too
(`policy.plan_rounds.round_plan_path`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from plan_lsp.policy.plan_paths import PlanPathResult
from plan_lsp.policy.plan_rounds import ACCESS_DENIED_HARD_LINK, PlanRecords, round_plan_path


@pytest.fixture
def plans(tmp_path: Path) -> Path:
    plans = tmp_path / "ws" / ".plan-lsp" / "plans"
    plans.mkdir(parents=True)
    (tmp_path / "ws" / "hello.py").write_text("print('hi')\n")
    return plans


def _round(
    plans: Path, name: str | None, approved: tuple[str, ...] = (), own: str | None = None
) -> PlanPathResult:
    return round_plan_path(
        plans,
        name,
        round_path=plans / own if own else None,
        records=PlanRecords(approved=tuple(plans / a for a in approved)),
        workspace=plans.parent.parent,
    )


# (name, approved, the round's own file, hard links to make: name → target) → the name
# written, or the refusal's start.
TABLE = [
    (None, (), None, {"PLAN.md": "../../hello.py"}, "PLAN-2.md"),  # the default: one of its own
    (None, (), "PLAN.md", {"PLAN.md": "../../hello.py"}, "PLAN-2.md"),
    ("notes.md", (), None, {"notes.md": "../../hello.py"}, "Access denied: notes.md has another"),
    ("sub/x.md", (), None, {"sub/x.md": "../../../hello.py"}, "Access denied: sub/x.md has"),
    (None, ("PLAN.md",), "PLAN-2.md", {"PLAN-2.md": "../../hello.py"}, "PLAN-3.md"),
    ("alias.md", ("PLAN.md",), None, {"alias.md": "PLAN.md"}, "Access denied: alias.md holds"),
    (None, (), None, {}, "PLAN.md"),
    ("notes.md", (), None, {}, "notes.md"),
    (None, ("PLAN.md",), None, {"PLAN-2.md": "../../hello.py"}, "PLAN-3.md"),  # taken: skipped
]


@pytest.mark.parametrize(("name", "approved", "own", "links", "expected"), TABLE)
def test_hard_links_table(
    plans: Path,
    name: str | None,
    approved: tuple[str, ...],
    own: str | None,
    links: dict[str, str],
    expected: str,
) -> None:
    (plans / "PLAN.md").write_text("# Approved\n")
    if "PLAN.md" in links:
        (plans / "PLAN.md").unlink()
    for link, target in links.items():
        path = plans / link
        path.parent.mkdir(parents=True, exist_ok=True)
        os.link((path.parent / target).resolve(), path)
    result = _round(plans, name, approved, own)
    if expected.startswith("Access denied"):
        assert not result.ok and result.error is not None, result
        assert result.error.startswith(expected), result.error
        return
    assert result.ok, result.error
    assert result.name == expected


def test_the_refusal_is_the_fixed_message(plans: Path) -> None:
    os.link(plans.parent.parent / "hello.py", plans / "PLAN.md")
    assert _round(plans, "PLAN.md").error == ACCESS_DENIED_HARD_LINK.format(name="PLAN.md")
