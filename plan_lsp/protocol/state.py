"""The session's value types as the wire carries them: modes, plan status, todos, questions,
the approved-plan record, and `SessionState`, pushed to clients on every change.

The vocabulary every layer speaks (each imports it from here), so it is defined here, in the
contract, which imports nothing of ours."""

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


PermissionAnswer = Literal["allow_once", "allow_always", "reject_once", "reject_always"]

TodoStatus = Literal["pending", "in_progress", "completed"]

DoMode = Literal["continuous", "stepwise"]


class Todo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str = Field(min_length=1)
    status: TodoStatus = "pending"


class Question(BaseModel):
    id: str
    text: str
    options: list[str]
    multiple: bool = False


class ApprovedPlan(BaseModel):
    """Exactly what the user approved: the buffer's text at the moment of approval."""

    path: str
    text: str
    sha256: str
    time: str


class ProviderInfo(BaseModel):
    """Which model back end the session uses, and what keeps it from working (if known)."""

    name: str = ""
    model: str | None = None
    baseUrl: str | None = None
    configured: bool = True
    problem: str | None = None


class McpServerStatus(BaseModel):
    name: str
    status: str = "configured"  # configured | starting | ready | failed
    error: str | None = None
    tools: list[str] = Field(default_factory=list)


class SessionUsage(BaseModel):
    """Tokens the session used and how full the model's context window is.

    `contextTokens`: the size of the last request sent (as the provider reported it, else
    estimated); `contextWindow`: the window it is measured against; the token totals are the
    session's sums of what providers reported (`inputTokens` includes `cachedInputTokens`);
    `costUsd` is null unless a price is configured; `compactions`: how often the conversation
    was compacted."""

    contextTokens: int = 0
    contextWindow: int = 0
    inputTokens: int = 0
    outputTokens: int = 0
    cachedInputTokens: int = 0
    costUsd: float | None = None
    compactions: int = 0


class StepProgress(BaseModel):
    """Step mode of the Do run: `stepwise` stops after each checklist item of the approved plan
    until the user runs the next one (`planLsp.runNextStep`) or the rest (`planLsp.runRest`)."""

    doMode: DoMode = "continuous"
    pausedAfterStep: int | None = None
    nextStep: int | None = None
    steps: int = 0
    summary: str = ""


class NextRequest(BaseModel):
    """The work mode and permission mode the next request uses once the Do run is over: the
    `after_do` setting, and the permission mode from before the approval (one chosen at
    approval applies to that Do run only)."""

    mode: WorkMode = Field(description="The work mode (`after_do`).")
    permissionMode: PermissionMode = Field(description="The permission mode.")


class SessionContext(BaseModel):
    """Facts about the session's surroundings that the server supplies (not persisted)."""

    shellProtection: str | None = None
    planShell: str | None = None
    sandbox: str | None = None
    planNetwork: bool = False
    provider: ProviderInfo = Field(default_factory=ProviderInfo)
    mcpServers: list[McpServerStatus] = Field(default_factory=list)
    configWarnings: list[str] = Field(default_factory=list)
    stepping: StepProgress = Field(default_factory=StepProgress)
    nextRequest: NextRequest | None = Field(
        default=None,
        description="Set while a Do run is running or paused between steps: the modes the "
        "next request uses after it (null: `mode` and `permissionMode`).",
    )


class SessionState(SessionContext):
    """`SessionState` as sent to clients (docs/protocol.md); camelCase on the wire.
    Pushed to clients as `planLsp/update {kind: "state"}` on every change."""

    model_config = ConfigDict(populate_by_name=True)

    sessionId: str
    mode: WorkMode
    permissionMode: PermissionMode
    planUri: str | None
    planStatus: PlanStatus
    outcome: Outcome
    todos: list[Todo]
    running: bool
    runId: str | None = None
    approvedPlan: ApprovedPlan | None = None
    usage: SessionUsage = Field(default_factory=SessionUsage)
