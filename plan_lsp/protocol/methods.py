"""The method table: every `planLsp/*` request and command, the requests the server sends
the client, the `initialize` options, and descriptions of the fields whose models carry
none. `docs/protocol.md` is generated from it (`scripts/gen_protocol.py`)."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from plan_lsp.protocol import params as p
from plan_lsp.protocol import results as r
from plan_lsp.protocol import review as rv
from plan_lsp.protocol.state import SessionState
from plan_lsp.protocol.updates import HistoryResult


@dataclass(frozen=True)
class Method:
    name: str
    params: type[BaseModel] | None
    result: type[BaseModel] | None
    doc: str
    result_nullable: bool = False


METHODS: tuple[Method, ...] = (
    Method("planLsp/state", p.WorkspaceParams, SessionState, "The session state."),
    Method(
        "planLsp/setMode",
        p.SetModeParams,
        r.ModeSwitchResult,
        "Switch plan ↔ build. Switching to build mode is refused while a plan is drafting "
        "or submitted.",
    ),
    Method("planLsp/toggleMode", p.WorkspaceParams, r.ModeSwitchResult, "Switch plan ↔ build."),
    Method(
        "planLsp/setPermissionMode",
        p.SetPermissionModeParams,
        SessionState,
        "How build-mode side effects are asked.",
    ),
    Method(
        "planLsp/prompt",
        p.PromptParams,
        r.PromptResult,
        "Start a run; answered when it ends (`$/cancelRequest` stops it). In plan mode the "
        "text becomes the session's task. Refused while another run is in progress.",
    ),
    Method("planLsp/cancel", p.CancelParams, r.CancelResult, "Stop the run in progress."),
    Method(
        "planLsp/retry",
        p.WorkspaceParams,
        r.PromptResult,
        "Start again the last run, which the model server failed (an `error` update with "
        "`retry`): its prompt is sent once, or the run goes on from its last complete step. "
        "Answered when it ends. Refused when there is none or a run is in progress.",
    ),
    Method(
        "planLsp/approvePlan",
        p.ApproveParams,
        SessionState,
        "Approve the submitted plan exactly as the buffer holds it, switch to build mode and "
        "start the Do run. Refused while a run is in progress.",
    ),
    Method(
        "planLsp/rejectPlan",
        p.RejectParams,
        SessionState,
        "Reject the submitted plan; with feedback the agent revises it.",
    ),
    Method(
        "planLsp/planRevisions",
        p.PlanRevisionsParams,
        r.PlanRevisionsResult,
        "A plan file's last two revisions (default: the session's current plan).",
    ),
    Method(
        "planLsp/plans",
        p.WorkspaceParams,
        r.PlansResult,
        "Every plan of the workspace (this session's and earlier ones') with its status.",
    ),
    Method(
        "planLsp/history",
        p.WorkspaceParams,
        HistoryResult,
        "The current conversation's updates, to render it again.",
    ),
    Method(
        "planLsp/newSession",
        p.NewSessionParams,
        SessionState,
        "Start a new conversation. Refused while a run is in progress.",
    ),
    Method(
        "planLsp/testConnection",
        p.WorkspaceParams,
        r.TestConnectionResult,
        "One cheap model request: does the model server answer and serve the model?",
    ),
    Method(
        "planLsp/compact",
        p.WorkspaceParams,
        SessionState,
        "Compact the conversation now (a `compaction` update, then `state`). Refused while a "
        "run is in progress.",
    ),
    Method(
        "planLsp/checkpoints",
        p.WorkspaceParams,
        r.CheckpointsResult,
        "The checkpoints of this session's Do runs: before each plan step and each "
        "side-effect tool call, with the files changed since the previous one.",
    ),
    Method(
        "planLsp/revert",
        p.RevertParams,
        r.RevertResult,
        "Bring the workspace back to a checkpoint: only what this session's Do run changed; "
        "a file the user changed since is merged or kept (listed). Restores the checklist and "
        "the todos and tells the model. Refused while a run is in progress.",
    ),
    Method(
        "planLsp/redo",
        p.WorkspaceParams,
        r.RevertResult,
        "Undo the last revert. Refused while a run is in progress or when there is none.",
    ),
    Method(
        "planLsp/steps",
        p.WorkspaceParams,
        r.StepsResult,
        "The approved plan's checklist items: each one's state (done, or why it is open), "
        "the checkpoint before it and the files it changed; and where step mode is.",
    ),
    Method(
        "planLsp/comments",
        rv.PlanParams,
        rv.CommentsResult,
        "The review comments on a plan's lines: kept ones and `> comment:` lines, each with "
        "its range, quoted text and status (docs/plans.md, review).",
    ),
)

COMMANDS: tuple[Method, ...] = (
    Method("planLsp.approvePlan", p.ApproveParams, SessionState, "As `planLsp/approvePlan`."),
    Method("planLsp.rejectPlan", p.RejectParams, SessionState, "As `planLsp/rejectPlan`."),
    Method("planLsp.toggleMode", p.WorkspaceParams, r.ModeSwitchResult, "As `planLsp/toggleMode`."),
    Method(
        "planLsp.showPreviousRevision",
        p.PlanRevisionsParams,
        r.ShowPreviousRevisionResult,
        "Write the previous revision of the plan file to a read-only file and ask the "
        "client to show it (`window/showDocument`).",
    ),
    Method("planLsp.revert", p.RevertParams, r.RevertResult, "As `planLsp/revert`."),
    Method(
        "planLsp.runNextStep",
        p.StepParams,
        SessionState,
        "Run one step of the approved plan (default: the first not done), then stop "
        "(stop reason `step_done`). Refused while a run is in progress.",
    ),
    Method(
        "planLsp.runRest",
        p.WorkspaceParams,
        SessionState,
        "Run every step not done yet without stopping (step mode ends).",
    ),
    Method(
        "planLsp.showStepChanges",
        p.StepParams,
        r.ShowStepChangesResult,
        "Write a step's unified diff to a read-only file outside the workspace and ask the "
        "client to show it (`window/showDocument`). Refused for a step that never ran.",
    ),
    Method(
        "planLsp.commentOnPlan",
        rv.CommentOnPlanParams,
        rv.CommentsResult,
        "Keep a comment on the lines of `range`; without `text`, put a `> comment: ` line "
        "under them for the user to type (`workspace/applyEdit`).",
    ),
    Method(
        "planLsp.sendComments",
        rv.PlanParams,
        rv.CommentsResult,
        "Send the open comments, each with its quoted lines, as a revision request.",
    ),
    Method(
        "planLsp.reviewPlan",
        rv.PlanParams,
        rv.ReviewResult,
        "A read-only subagent with a fresh context reads the plan; its findings become "
        "Warning diagnostics on the plan's lines. Refused while a run is in progress.",
    ),
)

CLIENT_REQUESTS: tuple[Method, ...] = (
    Method(
        "planLsp/requestPermission",
        r.RequestPermissionParams,
        r.RequestPermissionResult,
        "Sent to clients that declared `permissionRequests`; others get "
        "`window/showMessageRequest`.",
    ),
    Method(
        "planLsp/askUser",
        r.AskUserParams,
        r.AskUserResult,
        "Sent to clients that declared `questions`; others get one "
        "`window/showMessageRequest` per question.",
        result_nullable=True,
    ),
    Method(
        "planLsp/saveDocument",
        r.SaveDocumentParams,
        r.SaveDocumentResult,
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

# Descriptions of the value types of `state.py`, which carry none of their own: "Type"
# describes the type, "Type.field" one field. The generator (`scripts/gen_protocol.py`)
# refuses a field described nowhere.
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
    "SessionState.stepping": "Step mode of the Do run: where it stopped, what is next.",
    "StepProgress.doMode": "`continuous` (the plan in one run) or `stepwise` (a stop after "
    "each step).",
    "StepProgress.pausedAfterStep": "The step after which the stepwise run stopped.",
    "StepProgress.nextStep": "The first step not done; null when all are done.",
    "StepProgress.steps": "How many steps the approved plan has.",
    "StepProgress.summary": "Where step mode is, in words (what the last step changed).",
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
