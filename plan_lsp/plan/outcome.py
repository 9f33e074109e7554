"""The terminal-state class of a session (`SessionState.outcome`, docs/protocol.md).

Rule, first match wins:

| # | condition                                                      | outcome                 |
|---|----------------------------------------------------------------|-------------------------|
| 1 | a Do run completed                                             | `completed`             |
| 2 | never in plan mode and now in build mode                       | `never_planned`         |
| 3 | the plan file is non-empty, or the plan is submitted/approved  | `planning_with_plan`    |
| 4 | ever in plan mode, or in plan mode now                         | `planning_without_plan` |
| 5 | otherwise                                                      | `never_planned`         |

So a session that planned but never wrote a plan is told apart from one with a plan on
disk, whatever the status says, and a completed Do run wins over everything.
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
    """Classify per the table above; `mode` is `plan`|`build`, `plan_status` a PlanStatus."""
    if do_completed:
        return "completed"
    if not ever_planned and mode == "build":
        return "never_planned"
    if plan_file_nonempty or plan_status in _STATUSES_WITH_PLAN:
        return "planning_with_plan"
    if ever_planned or mode == "plan":
        return "planning_without_plan"
    return "never_planned"
