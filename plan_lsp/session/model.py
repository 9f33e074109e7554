"""Value types of one session: modes, plan status, todos, the approved-plan record.

These are the wire types of `SessionState` (DESIGN.md §7) and the vocabulary every layer
shares; this module imports nothing of ours.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class WorkMode(StrEnum):
    PLAN = "plan"
    BUILD = "build"


class PermissionMode(StrEnum):
    ASK = "ask"
    AUTO_EDIT = "auto_edit"
    YOLO = "yolo"
    STRICT = "strict"


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


class Actor(StrEnum):
    """Who caused a state change; recorded with every event."""

    USER = "user"
    MODEL = "model"
    APPROVAL = "approval"
    RESTORE = "restore"
    SYSTEM = "system"


TodoStatus = Literal["pending", "in_progress", "completed"]


class Todo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str = Field(min_length=1)
    status: TodoStatus = "pending"


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
