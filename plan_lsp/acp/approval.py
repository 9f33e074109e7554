"""The plan's approval over ACP: the whole plan is put in the conversation (the agent's
message) and in the `exit_plan_mode` call's content before the `switch_mode` permission
request is asked on that call — clients need not render a permission request's content —
and approving records exactly the text shown (sha256)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from acp import helpers, schema

from plan_lsp.acp import translate
from plan_lsp.acp.frontend import AcpFrontEnd
from plan_lsp.core import workflow
from plan_lsp.core.workspace import WorkspaceCore
from plan_lsp.plan.readiness import check_plan
from plan_lsp.protocol.state import PermissionMode
from plan_lsp.session import sha256_text

APPROVE_AUTO = "approve_auto_edit"
APPROVE_ASK = "approve_ask"
KEEP_PLANNING = "keep_planning"
APPROVAL_OPTIONS = [
    schema.PermissionOption(
        option_id=APPROVE_AUTO, name="Approve and build (auto-accept edits)", kind="allow_always"
    ),
    schema.PermissionOption(
        option_id=APPROVE_ASK, name="Approve and build (ask before edits)", kind="allow_once"
    ),
    schema.PermissionOption(
        option_id=KEEP_PLANNING,
        name="Keep planning (say what to change in your next message)",
        kind="reject_once",
    ),
]
APPROVAL_PERMISSION: dict[str, PermissionMode] = {
    APPROVE_AUTO: PermissionMode.AUTO_EDIT,
    APPROVE_ASK: PermissionMode.ASK,
}


async def approval(core: WorkspaceCore, frontend: AcpFrontEnd) -> str:
    """Ask the user to approve the submitted plan once all of it is in the conversation
    (and, if the client's buffer differs, the buffer's text too); the Do run's stop
    reason after approval, "end_turn" when the user keeps planning, "cancelled"."""
    path = core.session.main_plan_path
    try:
        text = core.plan_text(path)
        frontend.show_plan(path, text)
        buffer = await frontend.read_buffer(path)  # the editor's text, unsaved edits too
        if buffer is not None and buffer != text:
            text = buffer
            frontend.show_plan(path, text, from_editor=True)
        return await _approve_shown(core, frontend, path, text)
    finally:
        frontend.forget_buffer(path)


async def _approve_shown(core: WorkspaceCore, frontend: AcpFrontEnd, path: Path, text: str) -> str:
    """`text` is in the conversation: ask on the `exit_plan_mode` call (its content the
    plan), record exactly that text when approved."""
    problems = [i.message for i in check_plan(text) if i.severity == "error"]
    title = f"Build from this plan ({translate.shown_path(frontend.root, str(path))})"
    if problems:
        title += " (problems found: " + "; ".join(problems) + ")"
    call_id = frontend.walk.last_exit_call or f"approve-{sha256_text(text)[:12]}"
    shown: list[Any] = [translate.text_content(text)]
    where = [schema.ToolCallLocation(path=str(path))]
    if frontend.walk.last_exit_call is None:
        frontend.send(
            helpers.start_tool_call(
                call_id, title, kind="switch_mode", status="pending", content=shown,
                locations=where,
            )
        )  # fmt: skip
    else:
        frontend.send(helpers.update_tool_call(call_id, content=shown, locations=where))
    tool_call = schema.ToolCallUpdate(
        tool_call_id=call_id,
        title=title,
        kind="switch_mode",
        status="pending",
        content=shown,
        locations=where,
    )
    chosen = await frontend.request_permission(tool_call, APPROVAL_OPTIONS)
    if frontend.walk.last_exit_call is None:
        approved = chosen in APPROVAL_PERMISSION
        frontend.send(
            helpers.update_tool_call(call_id, status="completed" if approved else "failed")
        )
    if chosen is None:
        return "cancelled"
    if chosen not in APPROVAL_PERMISSION:
        await workflow.reject(core)
        frontend.show(
            "The plan stays unapproved. Say what to change and I will revise it, or "
            "switch to build mode yourself."
        )
        return "end_turn"
    previous = core.session.permission_mode
    try:
        await workflow.approve(
            core,
            sha256=sha256_text(text),
            permission_mode=APPROVAL_PERMISSION[chosen],
            force=True,
        )
        # Approved and on disk: from here the file is the plan the Do run follows.
        frontend.forget_buffer(path)
        return await run_result(core)
    finally:
        if core.session.permission_mode is not previous:
            workflow.set_permission_mode(core, previous)


async def run_result(core: WorkspaceCore) -> str:
    """The stop reason of the run the workflow just started (none: "end_turn")."""
    current = core.runs.current
    if current is None or current.task is None:
        return "end_turn"
    return (await asyncio.shield(current.task)).stop_reason
