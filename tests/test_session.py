"""The session state machine: transitions, refusals with reasons, persistence."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from plan_lsp.protocol.state import PermissionMode, PlanStatus, Todo, WorkMode
from plan_lsp.session import Actor, Session, StateStore, TransitionRefused


def make(tmp_path: Path) -> Session:
    store = StateStore(tmp_path / "state.db")
    return Session(store, tmp_path, tmp_path / ".plan-lsp" / "plans")


def test_model_cannot_leave_plan_mode(tmp_path: Path) -> None:
    s = make(tmp_path)
    with pytest.raises(TransitionRefused, match="cannot leave plan mode"):
        s.set_mode(WorkMode.BUILD, Actor.MODEL)
    assert s.mode is WorkMode.PLAN


def test_user_toggles_and_same_mode_is_no_change(tmp_path: Path) -> None:
    s = make(tmp_path)
    assert s.set_mode(WorkMode.PLAN, Actor.USER) is False
    assert s.set_mode(WorkMode.BUILD, Actor.USER) is True
    assert s.set_mode(WorkMode.PLAN, Actor.MODEL) is True


@pytest.mark.parametrize(
    ("status", "action", "allowed"),
    [
        (PlanStatus.NONE, "approve", True),  # a plan the user wrote
        (PlanStatus.SUBMITTED, "approve", True),
        # a plan rejected without feedback stays approvable and revisable
        (PlanStatus.REJECTED, "approve", True),
        (PlanStatus.REJECTED, "reject", True),
        (PlanStatus.NONE, "reject", False),
        (PlanStatus.SUBMITTED, "reject", True),
        (PlanStatus.APPROVED, "reject", False),
    ],
)
def test_plan_transition_table(
    tmp_path: Path, status: PlanStatus, action: str, allowed: bool
) -> None:
    s = make(tmp_path)
    s.plan_status = status
    plan = s.main_plan_path
    try:
        if action == "approve":
            s.approve(plan, "# Plan\n1. x\n", None, Actor.USER)
        else:
            s.reject("no", Actor.USER)
    except TransitionRefused as exc:
        assert not allowed
        assert status.value in str(exc)
    else:
        assert allowed


def test_approve_records_text_hash_and_switches_to_build(tmp_path: Path) -> None:
    s = make(tmp_path)
    plan = s.main_plan_path
    s.plan_submitted(plan, "# Plan\n1. a\n", Actor.MODEL)
    approved = s.approve(plan, "# Plan\n1. a (edited)\n", PermissionMode.AUTO_EDIT, Actor.USER)
    assert approved is not None
    assert approved.text == "# Plan\n1. a (edited)\n"
    assert s.mode is WorkMode.BUILD and s.permission_mode is PermissionMode.AUTO_EDIT
    # a second approval of the same text is a no-op
    assert s.approve(plan, "# Plan\n1. a (edited)\n", None, Actor.USER) is None
    # changing the approved text sends it back to drafting
    assert s.approved_text_changed("# Plan\n1. b\n") is True
    assert s.plan_status is PlanStatus.DRAFTING


def test_todos_at_most_one_in_progress(tmp_path: Path) -> None:
    s = make(tmp_path)
    with pytest.raises(TransitionRefused, match="at most one"):
        s.set_todos(
            [Todo(content="a", status="in_progress"), Todo(content="b", status="in_progress")],
            Actor.MODEL,
        )
    s.set_todos([Todo(content="a", status="in_progress")], Actor.MODEL)
    assert s.todos[0].content == "a"


def test_state_survives_reopen(tmp_path: Path) -> None:
    s = make(tmp_path)
    plan = s.main_plan_path
    s.plan_submitted(plan, "# P\n- x\n", Actor.MODEL)
    s.approve(plan, "# P\n- x\n", PermissionMode.ASK, Actor.USER)
    s.store.close()
    again = make(tmp_path)
    assert again.id == s.id
    assert again.plan_status is PlanStatus.APPROVED
    assert again.approved == s.approved
    assert again.mode is WorkMode.BUILD
    revisions = again.store.revisions(again.id)
    assert [r.text for r in revisions] == ["# P\n- x\n"]


def test_submit_only_in_plan_mode(tmp_path: Path) -> None:
    s = make(tmp_path)
    s.set_mode(WorkMode.BUILD, Actor.USER)
    with pytest.raises(TransitionRefused, match="plan mode"):
        s.plan_submitted(s.main_plan_path, "x", Actor.MODEL)


def test_a_submitted_revision_and_its_event_are_one_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = make(tmp_path)
    rev = s.plan_submitted(s.main_plan_path, "# P\n- x\n", Actor.MODEL)
    events = s.store.events(s.id, kinds=("plan_submitted",))
    assert [e.data["rev"] for e in events] == [rev]
    assert [r.rev for r in s.store.revisions(s.id)] == [rev]
    # a failing write leaves neither behind
    s.store.close()
    again = make(tmp_path)

    def event_fails(*args: object) -> int:
        raise sqlite3.OperationalError("the event cannot be written")

    monkeypatch.setattr(again.store, "_insert_event", event_fails)
    with pytest.raises(sqlite3.OperationalError):
        again.plan_submitted(again.main_plan_path, "# P2\n- y\n", Actor.MODEL)
    assert [r.rev for r in again.store.revisions(again.id)] == [rev]
