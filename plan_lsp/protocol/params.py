"""The contract's request params: what every `planLsp/*` request (and command) takes."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from plan_lsp.protocol.state import DoMode, PermissionMode, WorkMode


class WireModel(BaseModel):
    """A message of the contract: exactly the fields declared, no others. Dumped, it carries
    the fields it was given (an optional field left out stays out, not `null`); the other
    models of the contract (`SessionState` and its parts) are dumped whole."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    @model_serializer(mode="wrap")
    def _given_fields(self, dump: SerializerFunctionWrapHandler) -> dict[str, Any]:
        given = self.model_fields_set
        return {k: v for k, v in dump(self).items() if k in given}


# -- client → server requests: params --------------------------------------------------------


class WorkspaceParams(WireModel):
    """Every planLsp/* request may name its workspace folder; the first one by default."""

    workspaceUri: str | None = Field(
        default=None,
        description="A workspace folder's `file:` URI (default: the first folder).",
    )


class SetModeParams(WorkspaceParams):
    mode: WorkMode = Field(description="The work mode to switch to.")


class SetPermissionModeParams(WorkspaceParams):
    permissionMode: PermissionMode = Field(description="How build-mode side effects are asked.")


PROMPT_MAX_CHARS = 200_000


class PromptParams(WorkspaceParams):
    text: str = Field(
        min_length=1, max_length=PROMPT_MAX_CHARS, description="What the user asks, in their words."
    )


class CancelParams(WorkspaceParams):
    runId: str | None = Field(
        default=None, description="The run to stop (default: whichever run is in progress)."
    )


class ApproveParams(WorkspaceParams):
    """The plan the user approves, as they saw it: its document, and the sha256 of the text
    they had in front of them (code lenses and actions carry the document; a client that
    shows the text adds its hash)."""

    planUri: str | None = Field(
        default=None,
        description="The plan document approved; refused unless it is the submitted plan.",
    )
    sha256: str | None = Field(
        default=None,
        description="sha256 of the text the user saw; refused if the plan changed since.",
    )
    permissionMode: PermissionMode | None = Field(
        default=None, description="The permission mode of the Do run (default: unchanged)."
    )
    clearContext: bool = Field(
        default=False, description="Start the Do run in a fresh conversation."
    )
    execute: bool = Field(
        default=True, description="Start the Do run (false: approve and save only)."
    )
    force: bool = Field(
        default=False,
        description="Approve although readiness checks found errors (otherwise the user is asked).",
    )
    doMode: DoMode | None = Field(
        default=None,
        description="`stepwise`: the Do run stops after each step of the plan until "
        "`planLsp.runNextStep` or `planLsp.runRest` (default: the `do_mode` setting).",
    )


class RejectParams(WorkspaceParams):
    feedback: str | None = Field(
        default=None,
        max_length=50_000,
        description="Why; with feedback (or `> feedback:` lines in the plan) the agent revises "
        "the plan. Without, the plan is rejected and stays approvable and revisable.",
    )
    confirm: bool = Field(
        default=False,
        description="Without feedback, ask the user first (window/showMessageRequest), saying "
        "how to give feedback; a rejected plan is not rejected again. The plan's code lenses "
        "and actions set it; a client that asks for feedback itself sends what it got instead.",
    )


class NewSessionParams(WorkspaceParams):
    keepApprovedPlan: bool = Field(
        default=False, description="Keep the approved plan (and build mode) in the new session."
    )


class PlanRevisionsParams(WorkspaceParams):
    planUri: str | None = Field(
        default=None,
        description="The plan file whose revisions are compared (default: the session's "
        "current plan).",
    )


class RevertParams(WorkspaceParams):
    checkpointId: str = Field(
        min_length=1,
        max_length=200,
        description="The checkpoint to go back to (`planLsp/checkpoints`).",
    )


class StepParams(WorkspaceParams):
    step: int | None = Field(
        default=None,
        ge=1,
        description="A checklist item of the approved plan (1-based; default: the first not done).",
    )
