"""One line per run event for clients that do not render `planLsp/update`: they get these as
`window/logMessage` and as `$/progress` reports."""

from __future__ import annotations

from plan_lsp.protocol import updates as u

_LIMIT = 300


def _short(text: object) -> str:
    value = " ".join(str(text).split())
    return value if len(value) <= _LIMIT else value[: _LIMIT - 1] + "…"


def describe_update(update: u.Update) -> str | None:
    """The line a person reading the client's log should see, or None (text deltas, state
    and draft progress are not worth a line each)."""
    match update:
        case u.PromptUpdate(text=text):
            return f"plan-lsp: {_short(text)}"
        case u.ToolCallUpdate(tool=tool, arguments=arguments):
            return f"plan-lsp: {tool} {_short(arguments or '')}"
        case u.PermissionUpdate(decision=str(decision), tool=tool, summary=summary):
            return f"plan-lsp: {decision.replace('_', ' ')}: {tool} {_short(summary)}"
        case u.BlockedUpdate(tool=tool, reason=reason):
            return f"plan-lsp: blocked {tool}: {_short(reason)}"
        case u.PlanDraftUpdate(status="submitted" | "changedOnDisk" as status, uri=uri):
            return f"plan-lsp: plan {status}: {uri}"
        case u.ErrorUpdate(message=message):
            return f"plan-lsp: error: {_short(message)}"
        case u.DeviationUpdate(message=message) | u.CheckpointUpdate(
            action="reverted" | "redone" | "denied", message=message
        ):
            return f"plan-lsp: {_short(message)}"
        case u.CancelledCallsUpdate(calls=calls, reason=reason):
            return f"plan-lsp: stopped {', '.join(c.tool for c in calls)}: {_short(reason)}"
        case u.DoneUpdate(stopReason=reason):
            return f"plan-lsp: run finished ({reason})"
    return None
