"""Terminal-state classification of a session."""

from __future__ import annotations

import pytest

from plan_lsp.plan.outcome import classify_outcome
from plan_lsp.protocol.state import Outcome, PlanStatus

# ever_planned, mode, plan_file_nonempty, plan_status, do_completed -> outcome
TABLE = [
    (False, "build", False, "none", False, "never_planned"),
    (False, "build", True, "none", False, "never_planned"),  # a stale file is not planning
    (False, "build", False, "none", True, "completed"),
    (True, "build", False, "approved", True, "completed"),
    (True, "plan", True, "drafting", True, "completed"),  # completed wins over everything
    (False, "plan", False, "none", False, "planning_without_plan"),
    (True, "plan", False, "drafting", False, "planning_without_plan"),
    (True, "plan", False, "rejected", False, "planning_without_plan"),
    (True, "build", False, "none", False, "planning_without_plan"),  # planned, then left
    (True, "plan", True, "drafting", False, "planning_with_plan"),
    (False, "plan", True, "none", False, "planning_with_plan"),
    (True, "plan", False, "submitted", False, "planning_with_plan"),  # file gone since
    (True, "build", False, "approved", False, "planning_with_plan"),
    (True, "build", True, "approved", False, "planning_with_plan"),
    (True, "plan", True, "rejected", False, "planning_with_plan"),
]


@pytest.mark.parametrize(
    ("ever_planned", "mode", "plan_file_nonempty", "plan_status", "do_completed", "expected"),
    TABLE,
)
def test_classify_outcome(
    ever_planned: bool,
    mode: str,
    plan_file_nonempty: bool,
    plan_status: str,
    do_completed: bool,
    expected: str,
) -> None:
    assert (
        classify_outcome(
            ever_planned=ever_planned,
            mode=mode,
            plan_file_nonempty=plan_file_nonempty,
            plan_status=plan_status,
            do_completed=do_completed,
        )
        == expected
    )


def test_every_outcome_is_a_session_outcome() -> None:
    results = {
        classify_outcome(
            ever_planned=ever,
            mode=mode,
            plan_file_nonempty=nonempty,
            plan_status=status.value,
            do_completed=done,
        )
        for ever in (False, True)
        for mode in ("plan", "build")
        for nonempty in (False, True)
        for status in PlanStatus
        for done in (False, True)
    }
    assert results == {outcome.value for outcome in Outcome}
