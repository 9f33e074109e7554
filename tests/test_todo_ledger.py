"""The rule that keeps the todo list honest: a step is not done while a change made during
it was denied, refused or failed, until a later change of the same target succeeds."""

from __future__ import annotations

from plan_lsp.protocol.state import Todo
from plan_lsp.tools.registry import builtin_registry
from plan_lsp.tools.todo_ledger import StepLedger

TOOLS = {d.name: d for d in builtin_registry().definitions()}

DENIED = {"error": "permission_denied", "tool": "edit_file", "reason": "the user said no"}
FAILED = {"error": "old_text_not_found", "message": "old_text was not found"}


def todos(*items: tuple[str, str]) -> list[Todo]:
    return [Todo(content=c, status=s) for c, s in items]  # type: ignore[arg-type]


def statuses(ledger: StepLedger, *items: tuple[str, str]) -> tuple[list[str], list[str]]:
    recorded = ledger.record(todos(*items))
    return [t.status for t in recorded.todos], recorded.notes


def test_a_denied_edit_keeps_its_step_from_done_and_says_why() -> None:
    ledger = StepLedger()
    statuses(ledger, ("a", "in_progress"), ("b", "pending"))
    ledger.observe(TOOLS["edit_file"], '{"path": "app.py"}', True, DENIED)
    got, notes = statuses(ledger, ("a", "completed"), ("b", "in_progress"))
    assert got == ["pending", "in_progress"]
    assert notes == ["step 1 not marked done: the edit of app.py was denied"]
    ledger.observe(TOOLS["write_file"], {"path": "b.py"}, False, None)
    got, notes = statuses(ledger, ("a", "completed"), ("b", "completed"))
    assert got == ["pending", "completed"]  # still not done: said again
    assert notes == ["step 1 not marked done: the edit of app.py was denied"]


def test_a_later_successful_change_of_the_same_target_makes_up_for_it() -> None:
    ledger = StepLedger()
    statuses(ledger, ("a", "in_progress"))
    ledger.observe(TOOLS["edit_file"], {"path": "app.py"}, True, FAILED)
    ledger.observe(TOOLS["write_file"], {"path": "app.py"}, False, None)
    assert statuses(ledger, ("a", "completed")) == (["completed"], [])


def test_a_failure_names_its_reason_and_other_targets_do_not_make_up_for_it() -> None:
    ledger = StepLedger()
    statuses(ledger, ("a", "in_progress"))
    ledger.observe(
        TOOLS["bash"], {"command": "make   test"}, True, {"error": "exit", "message": "1"}
    )
    ledger.observe(TOOLS["bash"], {"command": "make build"}, False, None)
    got, notes = statuses(ledger, ("A", "completed"))  # case and spacing do not matter
    assert got == ["pending"]
    assert notes == ["step 1 not marked done: the command `make test` failed (1)"]


def test_without_a_step_in_progress_setbacks_go_to_the_steps_marked_completed() -> None:
    ledger = StepLedger()
    statuses(ledger, ("a", "pending"), ("b", "pending"), ("c", "completed"))
    ledger.observe(TOOLS["edit_file"], {"path": "x.py"}, True, {"error": "tool_not_allowed"})
    got, notes = statuses(ledger, ("a", "completed"), ("b", "pending"), ("c", "completed"))
    # c was completed before the setback: it stays done
    assert got == ["pending", "pending", "completed"]
    assert notes == ["step 1 not marked done: the edit of x.py was refused"]


def test_a_list_without_setbacks_is_kept_as_sent() -> None:
    ledger = StepLedger()
    ledger.observe(TOOLS["edit_file"], {"path": "x.py"}, False, None)
    items = (("a", "completed"), ("b", "in_progress"), ("c", "pending"))
    assert statuses(ledger, *items) == (["completed", "in_progress", "pending"], [])
