"""`planLsp/update`: every kind of update the session core emits, as one union (`Update`,
told apart by `kind`); each front-end maps it to its wire in one place."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Annotated, Literal, get_args

from pydantic import Field, TypeAdapter

from plan_lsp.protocol.errors import CancelledCall, ErrorCode, ErrorFix, StopReason
from plan_lsp.protocol.params import WireModel
from plan_lsp.protocol.results import CheckpointInfo, RevertResult
from plan_lsp.protocol.state import (
    PermissionAnswer,
    PermissionMode,
    PlanStatus,
    Question,
    SessionState,
    Todo,
    WorkMode,
)


class UpdateBase(WireModel):
    runId: str | None = Field(description="The run it belongs to (null outside a run).")
    workspaceUri: str = Field(description="The workspace folder it belongs to.")


class TextUpdate(UpdateBase):
    """The model's text, streamed (deltas are gathered for about one frame)."""

    kind: Literal["text"]
    delta: str = Field(description="The next piece of the model's text.")


class ToolCallUpdate(UpdateBase):
    """The model called a tool (sent before the call runs). A subagent (`task`) is announced
    with `subagent` and `description` instead of an id and arguments."""

    kind: Literal["toolCall"]
    tool: str = Field(description="The tool's name.")
    toolCallId: str | None = Field(default=None, description="The model's id of the call.")
    arguments: str | None = Field(
        default=None, description="The call's arguments as the model sent them (JSON text)."
    )
    subagent: str | None = Field(default=None, description="The subagent's conversation id.")
    description: str | None = Field(default=None, description="What the subagent is for.")


class ToolResultUpdate(UpdateBase):
    """What a tool call gave back to the model."""

    kind: Literal["toolResult"]
    toolCallId: str = Field(description="The model's id of the call.")
    tool: str = Field(description="The tool's name.")
    isError: bool = Field(description="The call failed or was refused.")
    content: str = Field(
        description="The observation's first 4,000 characters (cut as text: a JSON observation "
        "may arrive cut off, see `omitted`)."
    )
    omitted: int = Field(
        default=0,
        ge=0,
        description="Characters of the observation left out after `content` (0: none); the "
        "model read them all.",
    )


class BlockedUpdate(UpdateBase):
    """A call was refused by the mode or the permission rules (a `toolResult` follows)."""

    kind: Literal["blocked"]
    toolCallId: str = Field(description="The model's id of the call.")
    tool: str = Field(description="The tool's name.")
    error: Literal["tool_not_allowed", "permission_denied"] = Field(
        description="`tool_not_allowed`: the work mode forbids it; `permission_denied`: a rule "
        "or the user refused it."
    )
    reason: str = Field(description="Why, in a sentence.")


class PlanDraftUpdate(UpdateBase):
    """A plan file's progress: streaming into the editor (`drafting`), written by `plan_write`
    (`done`), submitted for approval (`submitted`, with its revision) or changed on disk by
    another program (`changedOnDisk`)."""

    kind: Literal["planDraft"]
    uri: str = Field(description="The plan file.")
    status: Literal["drafting", "submitted", "changedOnDisk"] | None = Field(
        default=None, description="Where the plan is (absent on `plan_write`'s `done`)."
    )
    chars: int | None = Field(default=None, description="The plan's length so far.")
    done: bool | None = Field(default=None, description="`plan_write` wrote the whole plan.")
    revision: int | None = Field(default=None, description="The submitted revision's number.")


ModeCause = Literal["mode_changed", "plan_approved", "permission_mode_changed"]


class ModeChangedUpdate(UpdateBase):
    """The work mode, the permission mode or the plan's status changed (the `state` update
    follows)."""

    kind: Literal["modeChanged"]
    mode: WorkMode = Field(description="The work mode now.")
    permissionMode: PermissionMode = Field(description="The permission mode now.")
    planStatus: PlanStatus = Field(description="The plan's status now.")
    cause: ModeCause = Field(description="What changed it.")


class TodosUpdate(UpdateBase):
    """The agent's todo list (`todo_write`); after approval it is mirrored into the plan's
    checklist."""

    kind: Literal["todos"]
    todos: list[Todo] = Field(description="The whole list.")


class QuestionUpdate(UpdateBase):
    """The model asks the user (`ask_user`); the answer comes through `planLsp/askUser` or
    `window/showMessageRequest`."""

    kind: Literal["question"]
    questions: list[Question] = Field(description="The questions, each with its options.")


class PermissionUpdate(UpdateBase):
    """A call waits for the user's permission (`planLsp/requestPermission` or
    `window/showMessageRequest` follows); sent again with `decision` once the user answered
    (or the question went unanswered: `reject_once`), so the history keeps the decisions."""

    kind: Literal["permission"]
    tool: str = Field(description="The tool's name.")
    summary: str = Field(description="The call in one line.")
    decision: PermissionAnswer | None = Field(
        default=None, description="The user's answer (absent while the question is open)."
    )


class DoneUpdate(UpdateBase):
    """A run ended; sent once its checklist is in the buffer and on disk."""

    kind: Literal["done"]
    stopReason: StopReason = Field(description="Why the run ended.")
    touched: list[str] = Field(description="Files the run changed (workspace-relative).")
    deviations: list[str] = Field(
        description="Files changed that the approved plan never mentions (Do runs)."
    )


class ErrorUpdate(UpdateBase):
    """Something went wrong; the run may go on (a cut-off call) or end (a provider error)."""

    kind: Literal["error"]
    message: str = Field(description="What happened.")
    code: ErrorCode | None = Field(
        default=None, description="For failures the user can act on: a code clients key help on."
    )
    fix: ErrorFix | None = Field(default=None, description="The setting that fixes it.")
    failedPrompt: bool | None = Field(
        default=None,
        description="The model never saw the prompt; it is not sent again with the next one.",
    )
    retry: bool | None = Field(
        default=None,
        description="The model server failed the run: `planLsp/retry` starts it again, the "
        "prompt kept (sent once) or the run going on from its last complete step.",
    )


class DeviationUpdate(UpdateBase):
    """A Do run changed a file the approved plan never mentions."""

    kind: Literal["deviation"]
    path: str = Field(description="The file (workspace-relative).")
    message: str = Field(description="The deviation, in a sentence.")


class StateUpdate(UpdateBase):
    """The whole `SessionState`, pushed on every change (never polled)."""

    kind: Literal["state"]
    state: SessionState = Field(description="The session state.")


class CancelledCallsUpdate(UpdateBase):
    """Running calls were stopped (a switch to plan mode)."""

    kind: Literal["cancelledCalls"]
    calls: list[CancelledCall] = Field(description="The calls stopped.")
    reason: str = Field(description="Why.")


class PromptUpdate(UpdateBase):
    """A run started on the user's request: what they asked, in their words."""

    kind: Literal["prompt"]
    origin: Literal["prompt", "do", "planning"] = Field(
        description="`prompt`: planLsp/prompt; `do`: an approval's Do run; `planning`: a "
        "rejection's revision."
    )
    text: str = Field(description="What the user asked (or did).")
    status: Literal["failed"] | None = Field(
        default=None,
        description="In `planLsp/history` only: the model never saw this prompt.",
    )


class CompactionUpdate(UpdateBase):
    """The conversation was compacted (the `state` update follows)."""

    kind: Literal["compaction"]
    trigger: Literal["auto", "manual"] = Field(
        description="`auto`: the context budget ran out; `manual`: planLsp/compact."
    )
    summary: str = Field(description="The summary that replaces the older conversation.")
    prunedOutputs: int = Field(description="Old tool outputs dropped.")
    tokensBefore: int = Field(description="The context's size before.")
    tokensAfter: int = Field(description="The context's size after.")


class CheckpointUpdate(UpdateBase):
    """A checkpoint of the Do run was recorded, or the workspace went back (`reverted`) or
    forward (`redone`), or a change the user denied was undone at once (`denied`)."""

    kind: Literal["checkpoint"]
    action: Literal["recorded", "reverted", "redone", "denied"] = Field(
        description="What happened."
    )
    checkpoint: CheckpointInfo | None = Field(default=None, description="The checkpoint recorded.")
    result: RevertResult | None = Field(default=None, description="What a revert or redo did.")
    message: str = Field(description="What happened, in a sentence.")


Update = Annotated[
    TextUpdate
    | ToolCallUpdate
    | ToolResultUpdate
    | BlockedUpdate
    | PlanDraftUpdate
    | ModeChangedUpdate
    | TodosUpdate
    | QuestionUpdate
    | PermissionUpdate
    | DoneUpdate
    | ErrorUpdate
    | DeviationUpdate
    | StateUpdate
    | CancelledCallsUpdate
    | PromptUpdate
    | CompactionUpdate
    | CheckpointUpdate,
    Field(discriminator="kind"),
]
"""`planLsp/update` params: one of the kinds above, told apart by `kind`."""

# Every update kind's model, in the union's order.
UPDATE_MODELS: tuple[type[UpdateBase], ...] = get_args(get_args(Update)[0])


class HistoryResult(WireModel):
    """What the client was shown in the current conversation, to render it again after a
    reload: the updates as sent (no `state`, no draft progress)."""

    updates: list[Update] = Field(description="The updates, oldest first.")


@cache
def _updates() -> TypeAdapter[Update]:
    return TypeAdapter(Update)


def parse_update(payload: Mapping[str, object]) -> Update:
    """An update given as JSON (by a layer below the core, or read back from the history),
    checked against the contract; raises pydantic's ValidationError."""
    return _updates().validate_python(payload)
