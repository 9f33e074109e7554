"""System prompts, reminders and the structured notes that tell the model about mode changes.

Per-request context is built here and marked `ephemeral` in message metadata: it is sent
with one request and never stored in the conversation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from plan_lsp.protocol.state import WorkMode
from plan_lsp.providers.base import ChatMessage
from plan_lsp.session.session import sha256_text
from plan_lsp.session.store import Event

BASE_PROMPT = """You are a coding agent working inside the user's editor, in the workspace \
{workspace}. Use the tools you are given; paths are relative to the workspace. Be concise."""

PLAN_PROMPT = """You are in PLAN MODE. Research the task with the read-only tools you have, \
then write a step-by-step plan with `plan_write` (Markdown; numbered or checklist steps; name \
the files you will change) and submit it with `exit_plan_mode`. You cannot change any file \
other than the plan document, and you cannot run commands that change anything; do not try. \
The user will approve, reject or comment on the plan."""

BUILD_PROMPT = """You are in BUILD MODE. You may change the workspace with the tools you are \
given, subject to the user's permissions. Keep changes focused on the task."""

DO_PROMPT = """You are executing a plan the user approved. Follow it step by step; keep the \
todo list current with `todo_write`; if a step turns out wrong, say so rather than silently \
doing something else."""

REMINDER_FULL = """<plan-mode-reminder>Plan mode is active. You MUST NOT make any edits \
(except to the plan file with `plan_write`), run any non-read-only tool, or otherwise change \
the system. Research, then write the plan with `plan_write` and call `exit_plan_mode` to ask \
the user for approval.</plan-mode-reminder>"""

REMINDER_SHORT = "<plan-mode-reminder>Plan mode is still active: read-only research, then \
`plan_write` and `exit_plan_mode`.</plan-mode-reminder>"

# Requests 1, 5, 9, ... carry the full reminder; the others the short one.
REMINDER_FULL_EVERY = 4


def system_prompt(mode: WorkMode, workspace: str, do_run: bool) -> ChatMessage:
    parts = [BASE_PROMPT.format(workspace=workspace)]
    if mode is WorkMode.PLAN:
        parts.append(PLAN_PROMPT)
    else:
        parts.append(BUILD_PROMPT)
        if do_run:
            parts.append(DO_PROMPT)
    return ChatMessage(role="system", content="\n\n".join(parts), meta={"kind": "system"})


def plan_reminder(plan_request_number: int) -> ChatMessage:
    full = (plan_request_number - 1) % REMINDER_FULL_EVERY == 0
    return ChatMessage(
        role="user",
        content=REMINDER_FULL if full else REMINDER_SHORT,
        meta={"ephemeral": True, "kind": "plan_reminder", "full": full},
    )


_WHO = {"user": "The user", "model": "You", "restore": "The session"}

# What the model is told of each mode-relevant event (its data as the session records it).
_DESCRIPTIONS: dict[str, Callable[[Event], str]] = {
    "mode_changed": lambda e: (
        f"{_WHO.get(e.actor, 'The system')} switched from {e.data['from']} mode to "
        f"{e.data['to']} mode."
    ),
    "plan_approved": lambda e: (
        f"The user approved the plan {e.data['path']} (sha256 {e.data['sha256'][:12]}); "
        f"the session is now in build mode with permission mode {e.data['permissionMode']}."
    ),
    "plan_rejected": lambda e: (
        "The user rejected the plan."
        + (f" Feedback: {e.data['feedback']}" if e.data.get("feedback") else "")
    ),
    "approved_plan_changed": lambda e: (
        f"The approved plan {e.data['path']} was edited after approval; it needs approval again."
    ),
    "permission_mode_changed": lambda e: (
        f"The user changed the permission mode from {e.data['from']} to {e.data['to']}."
    ),
}
CONTEXT_EVENT_KINDS = tuple(_DESCRIPTIONS)


def mode_change_note(events: list[Event]) -> ChatMessage | None:
    """One structured note for every mode-relevant event since the model's last request."""
    described: list[dict[str, Any]] = []
    lines: list[str] = []
    for ev in events:
        describe = _DESCRIPTIONS.get(ev.kind)
        if describe is None:
            continue
        lines.append(describe(ev))
        described.append({"seq": ev.seq, "kind": ev.kind, "actor": ev.actor, **ev.data})
    if not lines:
        return None
    return ChatMessage(
        role="user",
        content="<session-context>\n" + "\n".join(lines) + "\n</session-context>",
        meta={"ephemeral": True, "kind": "session_context", "events": described},
    )


def do_request(task: str | None, plan_path: str, plan_text: str) -> ChatMessage:
    body = (
        "Execute the approved plan.\n\n"
        f"Original task:\n{task or '(not recorded)'}\n\n"
        f"Approved plan ({plan_path}):\n{plan_text}"
    )
    # The server's own copy of the plan: the pinned context counts on this mark, never on
    # finding the plan's text somewhere in the conversation.
    meta = {"kind": "do", "planPath": plan_path, "planSha256": sha256_text(plan_text)}
    return ChatMessage(role="user", content=body, meta=meta)


def feedback_request(feedback: str, plan_path: str) -> ChatMessage:
    body = (
        f"The user rejected the plan in {plan_path} with this feedback:\n{feedback}\n\n"
        "Revise the plan with `plan_write` and submit it again with `exit_plan_mode`."
    )
    return ChatMessage(role="user", content=body, meta={"kind": "feedback"})
