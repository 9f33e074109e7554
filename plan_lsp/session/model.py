"""Value types of one session: modes, plan status, todos, the approved-plan record.

These are the wire types of `SessionState` (DESIGN.md §7). The mode enums come from
`policy.modes` and the todo item from `tools.todo_model` (layers below this one).
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from plan_lsp.policy.modes import Actor, PermissionMode, WorkMode
from plan_lsp.tools.todo_model import Todo, TodoStatus

__all__ = [
    "Actor",
    "ApprovedPlan",
    "Outcome",
    "PermissionMode",
    "PlanStatus",
    "SessionState",
    "Todo",
    "TodoStatus",
    "WorkMode",
]


class PlanStatus(StrEnum):
    NONE = "none"
    DRAFTING = "drafting"
    SUBMITTED = "submitted"
    APPROVED = "approved"
    REJECTED = "rejected"


class Outcome(StrEnum):
    NEVER_PLANNED = "never_planned"
    PLANNING_WITH_PLAN = "planning_with_plan"
    PLANNING_WITHOUT_PLAN = "planning_without_plan"
    COMPLETED = "completed"


class ApprovedPlan(BaseModel):
    """Exactly what the user approved: the buffer's text at the moment of approval."""

    path: str
    text: str
    sha256: str
    time: str


class SessionState(BaseModel):
    """`SessionState` as sent to clients (DESIGN.md §7); camelCase on the wire."""

    model_config = ConfigDict(populate_by_name=True)

    sessionId: str
    mode: WorkMode
    permissionMode: PermissionMode
    planUri: str | None
    planStatus: PlanStatus
    outcome: Outcome
    todos: list[Todo]
    running: bool
    approvedPlan: ApprovedPlan | None = None
    shellProtection: str | None = None
