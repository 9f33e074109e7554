"""The terminal-state class of a session (`SessionState.outcome`, docs/protocol.md).

A completed Do run wins over everything; a session that planned but never wrote a plan is
told apart from one with a plan on disk, whatever the status says.
"""

from __future__ import annotations

from typing import Literal

OutcomeName = Literal["never_planned", "planning_with_plan", "planning_without_plan", "completed"]

_STATUSES_WITH_PLAN = frozenset({"submitted", "approved"})


def classify_outcome(
    *,
    ever_planned: bool,
    mode: str,
    plan_file_nonempty: bool,
    plan_status: str,
    do_completed: bool,
) -> OutcomeName:
    """The first rule that holds; `mode` is `plan`|`build`, `plan_status` a PlanStatus."""
    if do_completed:
        return "completed"
    if not ever_planned and mode == "build":
        return "never_planned"
    if plan_file_nonempty or plan_status in _STATUSES_WITH_PLAN:
        return "planning_with_plan"
    if ever_planned or mode == "plan":
        return "planning_without_plan"
    return "never_planned"
