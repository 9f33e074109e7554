"""One line per run event for clients that do not render `planLsp/update`: they get these as
`window/logMessage` and as `$/progress` reports."""

from __future__ import annotations

from typing import Any

_LIMIT = 300


def _short(text: object) -> str:
    value = " ".join(str(text).split())
    return value if len(value) <= _LIMIT else value[: _LIMIT - 1] + "…"


def describe_update(update: dict[str, Any]) -> str | None:
    """The line a person reading the client's log should see, or None (text deltas, state
    and draft progress are not worth a line each)."""
    kind = update.get("kind")
    if kind == "prompt":
        return f"plan-lsp: {_short(update.get('text', ''))}"
    if kind == "toolCall":
        return f"plan-lsp: {update.get('tool')} {_short(update.get('arguments', ''))}"
    if kind == "permission" and update.get("decision"):
        answer = str(update.get("decision")).replace("_", " ")
        return f"plan-lsp: {answer}: {update.get('tool')} {_short(update.get('summary', ''))}"
    if kind == "blocked":
        return f"plan-lsp: blocked {update.get('tool')}: {_short(update.get('reason', ''))}"
    if kind == "planDraft" and update.get("status") in ("submitted", "changedOnDisk"):
        return f"plan-lsp: plan {update.get('status')}: {update.get('uri')}"
    if kind == "error":
        return f"plan-lsp: error: {_short(update.get('message', ''))}"
    if kind == "deviation":
        return f"plan-lsp: {_short(update.get('message', ''))}"
    if kind == "cancelledCalls":
        tools = ", ".join(str(c.get("tool")) for c in update.get("calls", []))
        return f"plan-lsp: stopped {tools}: {_short(update.get('reason', ''))}"
    if kind == "done":
        return f"plan-lsp: run finished ({update.get('stopReason')})"
    return None
