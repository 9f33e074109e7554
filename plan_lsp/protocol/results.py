"""What the `planLsp/*` requests answer, and the requests the server sends the client."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from plan_lsp.protocol.errors import CancelledCall, ErrorCode, ErrorFix, StopReason
from plan_lsp.protocol.params import WireModel
from plan_lsp.protocol.state import PermissionAnswer, Question, SessionState, StepProgress


class ModeSwitchResult(SessionState):
    """The session state after a mode switch, and the calls the switch stopped. In plan mode
    the answer comes only once every running call that changes the workspace has ended."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    cancelled: list[CancelledCall] = Field(description="The tool calls the switch stopped.")


class PromptResult(WireModel):
    """Answered when the run has ended (its `done` update was sent first)."""

    runId: str = Field(description="The run's id.")
    stopReason: StopReason = Field(description="Why the run ended.")


class CancelResult(WireModel):
    """An empty object: the run (if any) has been told to stop."""


class PlanRevisionsResult(WireModel):
    """The last two revisions of one plan file (`null` where there is none)."""

    previous: str | None = Field(description="The previous revision's text.")
    current: str | None = Field(description="The current revision's text.")
    previousRevision: int | None = Field(description="The previous revision's number.")
    currentRevision: int | None = Field(description="The current revision's number.")
    previousUri: str | None = Field(
        description="A read-only copy of the previous revision (under `.plan-lsp/revisions/`)."
    )


class PlanInfo(WireModel):
    """One plan file of the workspace: each planning round writes its own (`PLAN.md`,
    `PLAN-2.md`, …); an approved plan's file is never written over."""

    uri: str = Field(description="The plan file.")
    title: str = Field(description="Its first heading (else its file name).")
    status: Literal["drafting", "submitted", "rejected", "approved", "done"] = Field(
        description="Where it ended: `done` is approved and carried out."
    )
    sessionId: str = Field(description="The session that wrote it.")
    revisions: int = Field(description="How many revisions were submitted.")
    approvedAt: str | None = Field(
        default=None, description="When it was approved (ISO 8601, UTC), if it was."
    )
    updatedAt: str = Field(description="When it last changed status (ISO 8601, UTC).")
    current: bool = Field(description="It is the session's current plan (`planUri`).")
    carriedOut: str | None = Field(
        default=None,
        description="An approved plan whose run ended with steps not done: which, and why "
        "(`carried out partly: steps 2 and 4 open (…)`); its status stays `approved`.",
    )


class PlansResult(WireModel):
    """The workspace's plans, every session's, oldest first."""

    plans: list[PlanInfo] = Field(description="The plans.")


class ShowPreviousRevisionResult(PlanRevisionsResult):
    shown: bool = Field(description="Whether the client showed the previous revision.")


class TestConnectionResult(WireModel):
    """Whether the model server answers and serves the model; what to fix if not."""

    ok: bool = Field(description="The provider answered a request.")
    code: ErrorCode | None = Field(description="Why not (null when ok).")
    message: str = Field(description="What happened, in a sentence.")
    fix: ErrorFix = Field(description="The setting that fixes it (empty when ok).")


# -- server → client requests -------------------------------------------------------------------


class PermissionChange(WireModel):
    """What an edit call would do to a file, computed by the server with the tool's own code:
    the diff to show before the user answers."""

    uri: str = Field(description="The file.")
    before: str | None = Field(
        description="Its text now: the open buffer, else the disk; `null` for a new file (or "
        "when `truncated`)."
    )
    after: str | None = Field(
        description="Exactly the text the tool writes if allowed (`null` when `truncated`)."
    )
    truncated: bool = Field(
        description="The texts are too big to send (over 2 MB together): show the summary "
        "alone, no diff."
    )


class RequestPermissionParams(WireModel):
    """`planLsp/requestPermission` (clients that declared `permissionRequests`): may this
    side-effect call run? Unanswered within the person timeout counts as a refusal."""

    runId: str = Field(description="The run that makes the call.")
    tool: str = Field(description="The tool's name.")
    summary: str = Field(description="The call in one line, for the prompt.")
    arguments: dict[str, object] = Field(
        description="The call's arguments (for an edit: the path and the proposed text)."
    )
    options: list[PermissionAnswer] = Field(description="The answers offered, in order.")
    change: PermissionChange | None = Field(
        default=None,
        description="For a call that changes a file's text (`edit_file`, `write_file`): the "
        "file's text before and after, when the server can compute it (absent otherwise, "
        "e.g. when the call will fail).",
    )


class RequestPermissionResult(WireModel):
    optionId: PermissionAnswer = Field(
        description="The answer chosen; anything else counts as `reject_once`."
    )


class AskUserParams(WireModel):
    """`planLsp/askUser` (clients that declared `questions`): the model's questionnaire."""

    runId: str = Field(description="The run that asks.")
    questions: list[Question] = Field(description="The questions, each with its options.")


class AskUserResult(WireModel):
    """The answers by question id; a `null` result means the user dismissed the questions."""

    answers: dict[str, list[str]] = Field(description="Chosen options by question id.")


class SaveDocumentParams(WireModel):
    """`planLsp/saveDocument` (clients that declared `saveDocuments`): save this buffer as it
    is (no formatting, no added final newline)."""

    uri: str = Field(description="The document to save.")


class SaveDocumentResult(WireModel):
    saved: bool = Field(description="The buffer is saved and unmodified now.")


# -- checkpoints of the Do run -------------------------------------------------------------------


class CheckpointFile(WireModel):
    """A file changed between two checkpoints."""

    path: str = Field(description="The path (workspace-relative, `/` separators).")
    status: Literal["added", "deleted", "modified", "mode", "type"] = Field(
        description="What changed: content, permission bits (`mode`) or kind (`type`)."
    )
    added: int = Field(description="Lines added (0 for binary files).")
    removed: int = Field(description="Lines removed (0 for binary files).")


class CheckpointInfo(WireModel):
    """The workspace as it was at one moment of a Do run."""

    id: str = Field(description="The checkpoint's id (for `planLsp/revert`).")
    step: int | None = Field(
        description="The 1-based number of the checklist item it precedes (null: none yet)."
    )
    stepText: str | None = Field(description="That item's text.")
    toolCallId: str | None = Field(
        default=None, description="The tool call it precedes (absent: a step's start)."
    )
    kind: Literal["step", "tool", "after", "revert", "redo"] = Field(
        description="`step`: before a step starts; `tool`: before a side-effect call; `after`: "
        "the call ended; `revert`/`redo`: the workspace after one."
    )
    label: str = Field(description="What it was taken for, in a few words.")
    at: str = Field(description="When (ISO 8601, UTC).")
    files: list[CheckpointFile] = Field(description="Files changed since the previous one.")


class CheckpointsResult(WireModel):
    """The session's checkpoints, oldest first."""

    checkpoints: list[CheckpointInfo] = Field(description="The checkpoints.")
    canRedo: bool = Field(description="A revert can be undone (`planLsp/redo`).")


class PathWhy(WireModel):
    path: str = Field(description="The path (workspace-relative).")
    why: str = Field(description="Why, in a sentence.")


class RevertResult(WireModel):
    """What a revert (or redo) did. Never restored: anything outside the workspace folder,
    network effects, processes started, the `.git` folder."""

    checkpointId: str = Field(description="The checkpoint the workspace went back to.")
    restored: list[str] = Field(description="Paths now as at that checkpoint.")
    merged: list[str] = Field(
        description="Paths restored by merging with the user's own later changes."
    )
    kept: list[PathWhy] = Field(description="Paths left as they are (the user changed them).")
    notRestorable: list[PathWhy] = Field(
        description="Paths that could not be brought back (not recorded at that checkpoint)."
    )
    stepsReverted: list[int] = Field(
        description="The checklist items whose work was undone (their marks cleared)."
    )


class StepChanges(WireModel):
    """What one step of the Do run changed (read-only)."""

    step: int = Field(description="The checklist item (1-based).")
    files: list[CheckpointFile] = Field(description="The files it changed.")
    diff: str = Field(description="A unified diff of its text changes.")


class StepState(WireModel):
    """Where one checklist item of the approved plan is."""

    step: int = Field(description="The checklist item (1-based).")
    text: str = Field(description="Its text.")
    state: Literal["not_reached", "running", "done", "reverted", "denied", "failed"] = Field(
        description="Where it is."
    )
    reason: str | None = Field(default=None, description="Why it is not done, in a sentence.")
    checkpointId: str | None = Field(
        default=None, description="The checkpoint before it (revert target)."
    )


class StepInfo(StepState):
    """A checklist item of the approved plan with the files it changed (once it ran)."""

    files: list[CheckpointFile] = Field(default_factory=list, description="What it changed.")


class StepsResult(WireModel):
    """The approved plan's checklist items, in order, and where step mode is."""

    steps: list[StepInfo] = Field(description="The steps (empty without an approved plan).")
    stepping: StepProgress = Field(description="Step mode: paused after which step, next.")


class ShowStepChangesResult(StepChanges):
    uri: str = Field(description="The read-only file holding the diff (outside the workspace).")
    shown: bool = Field(description="The client showed it (`window/showDocument`).")
