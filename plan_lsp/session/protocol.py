"""The `planLsp/*` wire contract as pydantic models: every request's params and result, every
request the server sends the client, and every `planLsp/update` kind.

This module is the contract. `docs/protocol.md` and the VS Code client's
`src/protocol.generated.ts` are generated from it (`scripts/gen_protocol.py`), and
`tests/test_protocol_conformance.py` drives sessions through the real server and validates
everything it sends against these models. The models forbid fields they do not declare, so
a field the server sends but the contract lacks fails that test.

Every model is built when first used (`defer_build`), not when the server starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from plan_lsp.policy.modes import PermissionMode, WorkMode
from plan_lsp.policy.ports import PermissionAnswer
from plan_lsp.session.model import PlanStatus, SessionState
from plan_lsp.session.params import (
    ApproveParams,
    CancelParams,
    NewSessionParams,
    PlanRevisionsParams,
    PromptParams,
    RejectParams,
    SetModeParams,
    SetPermissionModeParams,
    WireModel,
    WorkspaceParams,
)
from plan_lsp.tools.base import Question
from plan_lsp.tools.todo_model import Todo

__all__ = [
    "CLIENT_REQUESTS",
    "COMMANDS",
    "EXPERIMENTAL_CLIENT_OPTIONS",
    "EXPERIMENTAL_SERVER_FIELDS",
    "FIELD_NOTES",
    "METHODS",
    "ApproveParams",
    "AskUserParams",
    "AskUserResult",
    "BlockedUpdate",
    "CancelParams",
    "CancelResult",
    "CancelledCall",
    "CancelledCallsUpdate",
    "CompactionUpdate",
    "DeviationUpdate",
    "DoneUpdate",
    "ErrorCode",
    "ErrorFix",
    "ErrorUpdate",
    "FixSetting",
    "HistoryResult",
    "Method",
    "ModeChangedUpdate",
    "ModeSwitchResult",
    "NewSessionParams",
    "PermissionAnswer",
    "PermissionChange",
    "PermissionUpdate",
    "PlanDraftUpdate",
    "PlanInfo",
    "PlanRevisionsParams",
    "PlanRevisionsResult",
    "PlansResult",
    "PromptParams",
    "PromptResult",
    "PromptUpdate",
    "QuestionUpdate",
    "RejectParams",
    "RequestPermissionParams",
    "RequestPermissionResult",
    "SaveDocumentParams",
    "SaveDocumentResult",
    "SetModeParams",
    "SetPermissionModeParams",
    "ShowPreviousRevisionResult",
    "StateUpdate",
    "StopReason",
    "TestConnectionResult",
    "TextUpdate",
    "TodosUpdate",
    "ToolCallUpdate",
    "ToolResultUpdate",
    "Update",
    "WireModel",
    "WorkspaceParams",
]


# -- shared vocabulary --------------------------------------------------------------------------

StopReason = Literal[
    "end_turn",
    "plan_submitted",
    "cancelled",
    "error",
    "max_steps",
    "timeout",
    "limit",
    "context_full",
]
"""Why a run ended: the model answered without a tool call (`end_turn`), `exit_plan_mode`
submitted the plan (`plan_submitted`), the user or a mode switch stopped it (`cancelled`), a
failure (`error`), the step limit (`max_steps`), the run time limit (`timeout`), the run's
token or cost limit (`limit`), or a request that does not fit the context window even after
compaction (`context_full`)."""

ErrorCode = Literal[
    "provider_unconfigured",
    "provider_unreachable",
    "provider_auth",
    "provider_model",
    "provider_not_found",
    "provider_no_tools",
    "provider_rate_limited",
    "provider_failed",
    "limit",
    "context_full",
]
"""Failures the user can act on; clients key their help on these: the model provider's
(`provider_*`), a run's token or cost limit (`limit`, config `limits`), a context window too
small for the next request even after compaction (`context_full`, config `context_window`)."""

FixSetting = Literal["baseUrl", "model", "provider", "apiKey"]


class ErrorFix(WireModel):
    """What fixes an error: the client-facing name of the setting to change (empty when no
    setting helps, e.g. a rate limit)."""

    setting: FixSetting | None = Field(
        default=None, description="The setting that fixes it (absent: none does)."
    )


class CancelledCall(WireModel):
    """A running tool call that was stopped (a switch to plan mode stops every call that
    changes the workspace)."""

    tool: str = Field(description="The tool's name.")
    callId: str = Field(description="The model's id of the call.")
    runId: str = Field(description="The run the call belonged to.")


# -- client → server requests: results --------------------------------------------------------


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


# -- planLsp/update ---------------------------------------------------------------------------


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


class ModeChangedUpdate(UpdateBase):
    """The work mode, the permission mode or the plan's status changed (the `state` update
    follows)."""

    kind: Literal["modeChanged"]
    mode: WorkMode = Field(description="The work mode now.")
    permissionMode: PermissionMode = Field(description="The permission mode now.")
    planStatus: PlanStatus = Field(description="The plan's status now.")
    cause: Literal["mode_changed", "plan_approved", "permission_mode_changed"] = Field(
        description="What changed it."
    )


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


UPDATE_MODELS: tuple[type[UpdateBase], ...] = (
    TextUpdate,
    ToolCallUpdate,
    ToolResultUpdate,
    BlockedUpdate,
    PlanDraftUpdate,
    ModeChangedUpdate,
    TodosUpdate,
    QuestionUpdate,
    PermissionUpdate,
    DoneUpdate,
    ErrorUpdate,
    DeviationUpdate,
    StateUpdate,
    CancelledCallsUpdate,
    PromptUpdate,
    CompactionUpdate,
)

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
    | CompactionUpdate,
    Field(discriminator="kind"),
]
"""`planLsp/update` params: one of the kinds above, told apart by `kind`."""


class HistoryResult(WireModel):
    """What the client was shown in the current conversation, to render it again after a
    reload: the updates as sent (no `state`, no draft progress)."""

    updates: list[Update] = Field(description="The updates, oldest first.")


# -- the method table --------------------------------------------------------------------------


@dataclass(frozen=True)
class Method:
    name: str
    params: type[BaseModel] | None
    result: type[BaseModel] | None
    doc: str
    result_nullable: bool = False


METHODS: tuple[Method, ...] = (
    Method("planLsp/state", WorkspaceParams, SessionState, "The session state."),
    Method(
        "planLsp/setMode",
        SetModeParams,
        ModeSwitchResult,
        "Switch plan ↔ build. Switching to build mode is refused while a plan is drafting "
        "or submitted.",
    ),
    Method("planLsp/toggleMode", WorkspaceParams, ModeSwitchResult, "Switch plan ↔ build."),
    Method(
        "planLsp/setPermissionMode",
        SetPermissionModeParams,
        SessionState,
        "How build-mode side effects are asked.",
    ),
    Method(
        "planLsp/prompt",
        PromptParams,
        PromptResult,
        "Start a run; answered when it ends (`$/cancelRequest` stops it). In plan mode the "
        "text becomes the session's task. Refused while another run is in progress.",
    ),
    Method("planLsp/cancel", CancelParams, CancelResult, "Stop the run in progress."),
    Method(
        "planLsp/approvePlan",
        ApproveParams,
        SessionState,
        "Approve the submitted plan exactly as the buffer holds it, switch to build mode and "
        "start the Do run. Refused while a run is in progress.",
    ),
    Method(
        "planLsp/rejectPlan",
        RejectParams,
        SessionState,
        "Reject the submitted plan; with feedback the agent revises it.",
    ),
    Method(
        "planLsp/planRevisions",
        PlanRevisionsParams,
        PlanRevisionsResult,
        "A plan file's last two revisions (default: the session's current plan).",
    ),
    Method(
        "planLsp/plans",
        WorkspaceParams,
        PlansResult,
        "Every plan of the workspace (this session's and earlier ones') with its status.",
    ),
    Method(
        "planLsp/history",
        WorkspaceParams,
        HistoryResult,
        "The current conversation's updates, to render it again.",
    ),
    Method(
        "planLsp/newSession",
        NewSessionParams,
        SessionState,
        "Start a new conversation. Refused while a run is in progress.",
    ),
    Method(
        "planLsp/testConnection",
        WorkspaceParams,
        TestConnectionResult,
        "One cheap model request: does the model server answer and serve the model?",
    ),
    Method(
        "planLsp/compact",
        WorkspaceParams,
        SessionState,
        "Compact the conversation now (a `compaction` update, then `state`). Refused while a "
        "run is in progress.",
    ),
)

COMMANDS: tuple[Method, ...] = (
    Method("planLsp.approvePlan", ApproveParams, SessionState, "As `planLsp/approvePlan`."),
    Method("planLsp.rejectPlan", RejectParams, SessionState, "As `planLsp/rejectPlan`."),
    Method("planLsp.toggleMode", WorkspaceParams, ModeSwitchResult, "As `planLsp/toggleMode`."),
    Method(
        "planLsp.showPreviousRevision",
        PlanRevisionsParams,
        ShowPreviousRevisionResult,
        "Write the previous revision of the plan file to a read-only file and ask the "
        "client to show it (`window/showDocument`).",
    ),
)

CLIENT_REQUESTS: tuple[Method, ...] = (
    Method(
        "planLsp/requestPermission",
        RequestPermissionParams,
        RequestPermissionResult,
        "Sent to clients that declared `permissionRequests`; others get "
        "`window/showMessageRequest`.",
    ),
    Method(
        "planLsp/askUser",
        AskUserParams,
        AskUserResult,
        "Sent to clients that declared `questions`; others get one "
        "`window/showMessageRequest` per question.",
        result_nullable=True,
    ),
    Method(
        "planLsp/saveDocument",
        SaveDocumentParams,
        SaveDocumentResult,
        "Sent to clients that declared `saveDocuments`, after the server changed a buffer "
        "that had no unsaved change of the user's.",
    ),
)

# `capabilities.experimental.planLsp` in the initialize answer.
EXPERIMENTAL_SERVER_FIELDS: dict[str, str] = {
    "version": "The server's version.",
    "methods": "The `planLsp/*` requests it answers.",
    "notifications": "The notifications it sends (`planLsp/update`).",
    "commands": "The `workspace/executeCommand` commands it runs.",
}

# `capabilities.experimental.planLsp` a client may declare in `initialize`.
EXPERIMENTAL_CLIENT_OPTIONS: dict[str, str] = {
    "updates": "`planLsp/update` notifications (default true once `planLsp` is declared; "
    "false: the run's steps come as `window/logMessage` and `$/progress` instead).",
    "permissionRequests": "Answer `planLsp/requestPermission` (else `window/showMessageRequest`).",
    "questions": "Answer `planLsp/askUser` (else `window/showMessageRequest`).",
    "saveDocuments": "Answer `planLsp/saveDocument` (else the server writes the file itself).",
}

# Descriptions of the value types defined below this module (`session/model.py`, `tools/`),
# which carry none of their own: "Type" describes the type, "Type.field" one field. The
# generator (`scripts/gen_protocol.py`) refuses a field described nowhere.
FIELD_NOTES: dict[str, str] = {
    "SessionState.sessionId": "The session's id.",
    "SessionState.mode": "`plan`: read-only tools only; `build`: the agent may change the "
    "workspace.",
    "SessionState.permissionMode": "How build-mode side effects are asked.",
    "SessionState.planUri": "The session's main plan file.",
    "SessionState.planStatus": "Where the plan is in its life.",
    "SessionState.outcome": "The session's terminal-state class.",
    "SessionState.todos": "The agent's todo list.",
    "SessionState.running": "A run is in progress.",
    "SessionState.runId": "The run in progress.",
    "SessionState.approvedPlan": "Exactly what the user approved.",
    "SessionState.shellProtection": "The plan-mode shell protection in force, in words.",
    "SessionState.planShell": "`sandboxed`, `classified` or `off`; null while the sandbox "
    "self-test runs (the state is pushed when it answers).",
    "SessionState.sandbox": "The sandbox in use (`bubblewrap`, `landlock`) or null.",
    "SessionState.planNetwork": "Plan-mode shell commands may use the network.",
    "SessionState.provider": "The model back end (never the key).",
    "SessionState.mcpServers": "Each configured MCP server and its status.",
    "SessionState.configWarnings": "Configuration keys that were ignored, and why.",
    "SessionState.usage": "Token usage and the context budget.",
    "SessionUsage.contextTokens": "The size of the last request sent (reported by the "
    "provider, else estimated).",
    "SessionUsage.contextWindow": "The context window it is measured against, in tokens.",
    "SessionUsage.inputTokens": "The session's input tokens as providers reported them "
    "(cached ones included).",
    "SessionUsage.outputTokens": "The session's output tokens as providers reported them.",
    "SessionUsage.cachedInputTokens": "The session's cached input tokens.",
    "SessionUsage.costUsd": "The session's cost in USD; null unless a price is configured.",
    "SessionUsage.compactions": "How often the conversation was compacted.",
    "ApprovedPlan.path": "The plan file.",
    "ApprovedPlan.text": "The buffer's text at the moment of approval.",
    "ApprovedPlan.sha256": "sha256 of that text.",
    "ApprovedPlan.time": "When (ISO 8601, UTC).",
    "ProviderInfo.name": "`openai`, `anthropic` or `scripted`.",
    "ProviderInfo.model": "The model; null when none is set and the provider has no default.",
    "ProviderInfo.baseUrl": "The model server; null: the provider's own endpoint.",
    "ProviderInfo.configured": "Whether the provider can be used as configured.",
    "ProviderInfo.problem": "What keeps it from working.",
    "McpServerStatus.name": "The server's configured name.",
    "McpServerStatus.status": "`configured`, `starting`, `ready` or `failed`.",
    "McpServerStatus.error": "Why it failed.",
    "McpServerStatus.tools": "Its tools, as the model sees them (`mcp__<server>__<tool>`).",
    "Todo": "An item of the agent's todo list; at most one is `in_progress`.",
    "Todo.content": "What to do.",
    "Todo.status": "`pending`, `in_progress` or `completed`.",
    "Question": "A question of `ask_user`.",
    "Question.id": "Its id (answers are keyed by it).",
    "Question.text": "The question.",
    "Question.options": "The answers offered.",
    "Question.multiple": "Several options may be chosen.",
}
