"""Plan files per round: `round_plan_path` chooses the file a planning round writes; an
approved plan's file is never written over, and the name chosen always passes every check
of `validate_plan_path` (the name is computed, never taken from the model)."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plan_lsp.policy import plan_paths as pp
from plan_lsp.policy.plan_paths import validate_plan_path
from plan_lsp.policy.plan_rounds import MAX_ROUND_NUMBER, PlanRecords, round_plan_path
from tests.test_session_core import (  # _no_sandbox_probe: autouse, no probe process
    _core,
    _finished,
    _no_sandbox_probe,  # noqa: F401
    plan_then_do_turns,
)


def _plans(root: Path) -> Path:
    plans = root / "ws" / ".plan-lsp" / "plans"
    plans.mkdir(parents=True)
    (plans / "PLAN.md").write_text("# Approved\n1. step\n")
    (plans / "sub").mkdir()
    (plans / "sub" / "x.md").write_text("# Sub\n")
    return plans


@pytest.fixture
def plans(tmp_path: Path) -> Path:
    return _plans(tmp_path)


def _target(
    plans: Path,
    name: str | None,
    approved: tuple[str, ...] = ("PLAN.md",),
    recorded: tuple[str, ...] = (),
    round_file: str | None = None,
) -> pp.PlanPathResult:
    records = PlanRecords(
        approved=tuple(plans / a for a in approved),
        recorded=tuple(plans / r for r in (*recorded, *approved)),
    )
    return round_plan_path(
        plans,
        name,
        round_path=plans / round_file if round_file else None,
        records=records,
        workspace=plans.parent.parent,
    )


# (name, approved files, recorded files, the round's file, files made first) → the name
# written, or the start of the refusal.
TABLE: list[tuple[str | None, tuple[str, ...], tuple[str, ...], str | None, str, str]] = [
    (None, (), (), None, "", "PLAN.md"),  # nothing approved: PLAN.md as always
    ("PLAN.md", (), (), None, "", "PLAN.md"),  # a user's PLAN.md never approved stays
    (None, ("PLAN.md",), (), None, "", "PLAN-2.md"),
    (None, ("PLAN.md",), (), "PLAN-2.md", "", "PLAN-2.md"),  # the round keeps its file
    (None, ("PLAN.md",), ("PLAN-2.md",), "PLAN-2.md", "", "PLAN-2.md"),
    (None, ("PLAN.md",), ("PLAN-2.md",), None, "", "PLAN-3.md"),  # recorded, since deleted
    (None, ("PLAN.md",), (), None, "file:PLAN-2.md", "PLAN-3.md"),  # a file of the user's
    (None, ("PLAN.md",), (), None, "file:plan-2.md", "PLAN-3.md"),  # under another case
    (None, ("PLAN.md",), (), None, "fifo:PLAN-2.md", "PLAN-3.md"),
    (None, ("PLAN.md",), (), None, "link:PLAN-2.md", "PLAN-3.md"),
    (None, ("PLAN.md",), (), None, "dir:PLAN-2.md", "PLAN-3.md"),
    (None, ("PLAN.md", "PLAN-2.md"), (), None, "", "PLAN-3.md"),
    (None, ("PLAN.md",), (), "other.md", "", "other.md"),
    ("other.md", ("PLAN.md",), (), None, "", "other.md"),
    ("PLAN-2.md", ("PLAN.md",), (), "PLAN-2.md", "", "PLAN-2.md"),
    ("PLAN.md", ("PLAN.md",), (), None, "", "Access denied: PLAN.md holds an approved plan"),
    ("PLAN.md", ("PLAN.md",), (), "PLAN-2.md", "", "Access denied: PLAN.md holds an"),
    ("plan.md", ("PLAN.md",), (), None, "", "Access denied: plan.md holds an approved plan"),
    ("sub/x.md", ("sub/x.md",), (), None, "", "Access denied: sub/x.md holds an approved"),
    ("alias.md", ("PLAN.md",), (), None, "hardlink:alias.md", "Access denied: alias.md holds"),
    ("../PLAN.md", ("PLAN.md",), (), None, "", "Access denied: ../PLAN.md contains '..'"),
    ("link.md", (), (), None, "link:link.md", "Access denied: link.md is (or lies under)"),
    ("fifo.md", (), (), None, "fifo:fifo.md", "fifo.md is not a regular file"),
]


def _make(plans: Path, spec: str) -> None:
    if not spec:
        return
    kind, _, name = spec.partition(":")
    path = plans / name
    if kind == "file":
        path.write_text("# mine\n")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "link":
        path.symlink_to(plans / "PLAN.md")
    elif kind == "dir":
        path.mkdir()
    elif kind == "hardlink":
        os.link(plans / "PLAN.md", path)


@pytest.mark.parametrize(("name", "approved", "recorded", "round_file", "make", "expected"), TABLE)
def test_round_plan_path_table(
    plans: Path,
    name: str | None,
    approved: tuple[str, ...],
    recorded: tuple[str, ...],
    round_file: str | None,
    make: str,
    expected: str,
) -> None:
    _make(plans, make)
    result = _target(plans, name, approved, recorded, round_file)
    if " " in expected:  # a refusal
        assert not result.ok and result.resolved is None
        assert result.error is not None and result.error.startswith(expected), result.error
        return
    assert result.ok, result.error
    assert result.name == expected
    assert result.resolved == str(plans / expected)


def test_the_refusal_names_the_free_file(plans: Path) -> None:
    (plans / "PLAN-2.md").write_text("# someone's\n")
    result = _target(plans, "PLAN.md")
    assert result.error == (
        "Access denied: PLAN.md holds an approved plan, which is kept as it was approved; "
        "write this plan to PLAN-3.md"
    )
    sub = _target(plans, "sub/x.md", approved=("sub/x.md",))
    assert sub.error is not None and sub.error.endswith("write this plan to sub/x-2.md")


def test_a_numbered_approved_plan_counts_on(plans: Path) -> None:
    result = _target(plans, "PLAN-2.md", approved=("PLAN.md", "PLAN-2.md"))
    assert result.error is not None and result.error.endswith("write this plan to PLAN-3.md")


def test_when_no_name_is_free_the_round_is_refused(plans: Path) -> None:
    recorded = tuple(f"PLAN-{n}.md" for n in range(2, MAX_ROUND_NUMBER + 1))
    result = _target(plans, None, recorded=recorded)
    assert not result.ok
    assert (
        result.error == "Access denied: no free plan file name next to PLAN.md (up to PLAN-999.md)"
    )


def test_a_plans_directory_behind_a_link_is_refused_as_before(tmp_path: Path) -> None:
    real = tmp_path / "elsewhere"
    real.mkdir()
    (tmp_path / "ws" / ".plan-lsp").mkdir(parents=True)
    (tmp_path / "ws" / ".plan-lsp" / "plans").symlink_to(real, target_is_directory=True)
    plans = tmp_path / "ws" / ".plan-lsp" / "plans"
    result = round_plan_path(
        plans, None, round_path=None, records=PlanRecords(), workspace=tmp_path / "ws"
    )
    assert not result.ok
    assert result.error == validate_plan_path(plans, None, must_exist=False).error


# -- property: any sequence of rounds and approvals ---------------------------------------------

NAMES = st.sampled_from(
    [None, None, None, "PLAN.md", "plan.md", "PLAN-2.md", "Plan-2.md", "PLAN-3.md", "a.md",
     "A.md", "sub/a.md", "sub/A.md", "../PLAN.md", "PLAN.txt", ".hidden.md"]
)  # fmt: skip
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("write"), NAMES),
        st.tuples(st.just("approve"), st.none()),
        st.tuples(st.just("user_file"), NAMES),
    ),
    max_size=25,
)


@given(STEPS)
def test_no_sequence_of_rounds_writes_over_an_approved_plan(
    steps: list[tuple[str, str | None]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        plans = _plans(Path(tmp))
        (plans / "PLAN.md").unlink()
        workspace = plans.parent.parent
        approved: dict[Path, str] = {}  # file → sha256 of the approved text
        recorded: list[Path] = []
        round_file: Path | None = None
        for number, (step, name) in enumerate(steps):
            if step == "user_file":
                # Someone else makes a file; a name the checks refuse is left alone.
                checked = validate_plan_path(plans, name, must_exist=False, workspace=workspace)
                if checked.ok and checked.resolved and not Path(checked.resolved).exists():
                    Path(checked.resolved).parent.mkdir(parents=True, exist_ok=True)
                    Path(checked.resolved).write_text("# the user's own\n")
                continue
            if step == "approve":
                if round_file is not None:
                    approved[round_file] = hashlib.sha256(round_file.read_bytes()).hexdigest()
                    round_file = None
                continue
            result = round_plan_path(
                plans,
                name,
                round_path=round_file,
                records=PlanRecords(approved=tuple(approved), recorded=tuple(recorded)),
                workspace=workspace,
            )
            if not result.ok:
                assert result.error and result.error.startswith("Access denied")
                continue
            assert result.resolved is not None and result.name is not None
            again = validate_plan_path(plans, result.name, must_exist=False, workspace=workspace)
            assert again.ok and again.resolved == result.resolved
            target = Path(result.resolved)
            folded = {str(p).casefold() for p in approved}
            assert str(target).casefold() not in folded
            default_approved = str(plans / "PLAN.md").casefold() in folded
            if name is None and default_approved and round_file is not None:
                if str(round_file).casefold() not in folded:
                    assert target == round_file  # a round after an approval keeps its file
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(f"# plan {number}\n")
            recorded.append(target)
            round_file = target
        for path, digest in approved.items():
            assert hashlib.sha256(path.read_bytes()).hexdigest() == digest


# -- through the session core: two rounds, the list, revisions per file -----------------------


ROUND_2 = "# Plan two\n\n1. Say goodbye in `hello.py`.\n2. Nothing else.\n"
ROUND_2_REVISED = "# Plan two, revised\n\n1. Say goodbye in `hello.py` only.\n"


async def test_a_second_round_keeps_the_approved_plan_and_lists_both(tmp_path: Path) -> None:
    from plan_lsp.core import Refused, workflow
    from plan_lsp.protocol.state import WorkMode
    from plan_lsp.protocol.updates import ToolResultUpdate
    from plan_lsp.session import sha256_text
    from tests.turns import PLAN_TEXT, call, calls, plan_turns

    turns = [
        *plan_then_do_turns(),
        *plan_turns(ROUND_2),
        *plan_turns(ROUND_2_REVISED),
        # The model names the approved plan's file: refused, then it uses its round's file.
        calls(call("plan_write", content="# overwrite\n", plan_filename="PLAN.md")),
        {"text": "Understood."},
    ]
    core, frontend = _core(tmp_path, turns)
    plans_dir = core.plans_dir
    await workflow.prompt(core, "Make the greeting polite")
    await workflow.approve(core, sha256=sha256_text(PLAN_TEXT))
    await _finished(core)
    assert core.session.completed_do

    await workflow.set_mode(core, WorkMode.PLAN)
    answer = await workflow.prompt(core, "Now say goodbye")
    assert answer.stopReason == "plan_submitted"
    assert (plans_dir / "PLAN.md").read_text() == PLAN_TEXT  # the approved plan, unchanged
    assert (plans_dir / "PLAN-2.md").read_text() == ROUND_2
    state = core.state()
    assert state.planUri == (plans_dir / "PLAN-2.md").as_uri()
    assert state.planStatus == "submitted"

    # The round keeps its file through a rejection and a revision.
    await workflow.reject(core, "only hello.py")
    await _finished(core)
    assert (plans_dir / "PLAN-2.md").read_text() == ROUND_2_REVISED
    assert not (plans_dir / "PLAN-3.md").exists()

    listed = workflow.plans(core).plans
    assert [(p.uri.rsplit("/", 1)[1], p.status, p.revisions, p.current) for p in listed] == [
        ("PLAN.md", "approved", 1, False),
        ("PLAN-2.md", "submitted", 2, True),
    ]
    # Its Do run ticked no checklist item: the list says so instead of "done".
    assert (listed[0].carriedOut or "").startswith("carried out partly: steps 1 and 2 open")
    assert [p.title for p in listed] == ["Plan: greet politely", "Plan two, revised"]
    assert listed[0].approvedAt is not None and listed[1].approvedAt is None

    # Compare within a plan's own revisions: PLAN-2.md's two, PLAN.md has one.
    revs = workflow.plan_revisions(core)
    assert (revs.previous, revs.current) == (ROUND_2, ROUND_2_REVISED)
    first = workflow.plan_revisions(core, (plans_dir / "PLAN.md").as_uri())
    assert (first.previous, first.current) == (None, PLAN_TEXT)

    # The model naming the approved plan's file is refused, and told where to write.
    await workflow.prompt(core, "try the old file")
    results = [u.content for u in frontend.updates if isinstance(u, ToolResultUpdate) and u.isError]
    assert (plans_dir / "PLAN.md").read_text() == PLAN_TEXT
    assert results[-1] == json.dumps(
        {
            "error": "invalid_plan_path",
            "message": "Access denied: PLAN.md holds an approved plan, which is kept as it "
            "was approved; write this plan to PLAN-2.md",
        }
    )

    # Approving approves PLAN-2.md's text.
    text = (plans_dir / "PLAN-2.md").read_text()
    state = await workflow.approve(core, sha256=sha256_text(text), execute=False)
    assert state.approvedPlan is not None
    assert state.approvedPlan.path == str(plans_dir / "PLAN-2.md")
    with pytest.raises(Refused):
        await workflow.approve(core, plan_uri=(plans_dir / "PLAN.md").as_uri(), execute=False)


# -- property: the session's rounds (the choice kept per round, the store's records, restarts) --

SESSION_STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("draft"), NAMES),  # plan_write (and the draft it streams first)
        st.tuples(st.just("submit"), st.none()),
        st.tuples(st.just("approve"), st.none()),
        st.tuples(st.just("reject"), st.none()),
        st.tuples(st.just("new_conversation"), st.booleans()),
        st.tuples(st.just("restart"), st.none()),
    ),
    max_size=20,
)


@given(SESSION_STEPS)
def test_no_sequence_of_session_rounds_writes_over_an_approved_plan(
    steps: list[tuple[str, Any]],
) -> None:
    from plan_lsp.protocol.state import WorkMode
    from plan_lsp.session import Actor, Session, StateStore, TransitionRefused

    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "ws"
        plans = workspace / ".plan-lsp" / "plans"
        plans.mkdir(parents=True)
        store = StateStore(Path(tmp) / "state.db")
        session = Session(store, workspace, plans)
        approved: dict[Path, bytes] = {}
        for number, (step, arg) in enumerate(steps):
            if session.mode is not WorkMode.PLAN:
                session.set_mode(WorkMode.PLAN, Actor.USER)
            try:
                if step == "draft":
                    if arg is None:
                        # The streaming draft creates the round's (empty) file first.
                        begun = session.plan_target(plans, None)
                        if begun.ok and begun.resolved and not Path(begun.resolved).exists():
                            Path(begun.resolved).write_text("")
                    target = session.plan_target(plans, arg)
                    if not target.ok:
                        assert target.error and not target.ok
                        continue
                    assert target.resolved is not None and target.name is not None
                    checked = validate_plan_path(plans, target.name, must_exist=False)
                    assert checked.ok and checked.resolved == target.resolved
                    path = Path(target.resolved)
                    assert path not in approved, f"{path.name} holds an approved plan"
                    if arg is None and begun.ok:
                        assert path == Path(begun.resolved or "")  # one file per round
                    session.plan_drafting(path, Actor.MODEL)
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(f"# plan {number}\n")
                elif step == "submit" and session.plan_path:
                    path = session.main_plan_path
                    if path.exists() and path.read_text().strip():
                        session.plan_submitted(path, path.read_text(), Actor.MODEL)
                elif step == "approve" and session.plan_path:
                    path = session.main_plan_path
                    if path.exists() and path.read_text().strip():
                        session.approve(path, path.read_text(), None, Actor.USER)
                        approved.setdefault(path, path.read_bytes())
                elif step == "reject":
                    session.reject("shorter", Actor.USER)
                elif step == "new_conversation":
                    session.new_conversation(bool(arg), Actor.USER)
                elif step == "restart":
                    store.close()
                    store = StateStore(Path(tmp) / "state.db")
                    session = Session(store, workspace, plans)
            except TransitionRefused:
                continue
        for path, text in approved.items():
            assert path.read_bytes() == text, f"{path.name} was written over"
        store.close()
