"""The plan tools: `plan_write`, `exit_plan_mode`, `enter_plan_mode`.

They change the session's plan status, so they live with the agent, which owns the session
for a run. Paths from the model are untrusted and go through `policy.plan_paths`; the plan
file itself is written through the workspace-edit gate as a plan file (`plan_file=True`):
only Markdown files in real folders of the plans directory below `.plan-lsp/`, written
without following links. Nothing is created on disk before the final name is validated.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol

from pydantic import Field

from plan_lsp.plan.document import MAX_PLAN_CHARS
from plan_lsp.plan.text import as_lines, only_line_break
from plan_lsp.policy.arguments import ArgumentModel
from plan_lsp.policy.plan_paths import validate_plan_path
from plan_lsp.policy.ports import FileEdit, PermissionRequest
from plan_lsp.policy.safe_fs import read_text
from plan_lsp.policy.safety import Safety, ToolDefinition
from plan_lsp.policy.workspace_edit import EditResult, apply_file_edit
from plan_lsp.protocol.state import PermissionMode, WorkMode
from plan_lsp.session import Actor, Session, TransitionRefused
from plan_lsp.tools.base import Tool, ToolContext, ToolResult


class PlanDraftPort(Protocol):
    """Where plan drafts stream while the model writes them (the editor's buffer)."""

    async def begin(self, run_id: str, path: Path) -> None:
        """Open the plan document in the editor (without stealing focus). Creates no file:
        a plan that does not exist yet lives in the buffer until plan_write saves it."""

    async def show(self, path: Path) -> None:
        """The plan is on disk now: open it in the editor if it is not open (an editor may
        have been unable to open it while it did not exist)."""

    def feed(self, path: Path, arguments_delta: str) -> None:
        """More raw `plan_write` argument text arrived; send coalesced incremental edits."""

    async def abandon(self, path: Path) -> None:
        """The draft turned out to target another file: put this buffer back as it was."""

    async def complete(self, path: Path, content: str) -> None:
        """The draft is final: make the open buffer hold exactly `content`."""

    def buffer_text(self, path: Path) -> str | None:
        """The open buffer's text (the truth while open), or None."""


def _on_disk(workspace: Path, path: Path) -> str | None:
    """The plan file's text, walked from the workspace without following links; None when
    it cannot be read."""
    try:
        return read_text(workspace.resolve(), path)
    except (OSError, UnicodeDecodeError):
        return None


def _as_plan_file(content: str, buffer: str | None, workspace: Path, path: Path) -> str:
    """The plan as its file holds it: whole lines (every editor then shows, saves and
    approves the same bytes; Vim and Neovim add a missing final line break), with the line
    breaks the open buffer or the existing file uses throughout (CRLF stays CRLF)."""
    existing = buffer if buffer is not None else _on_disk(workspace, path)
    style = only_line_break(existing) if existing else None
    return as_lines(content, style if style == "\r\n" else "\n")


class _DiskOnly:
    """An editor port that reports every document closed: the plan's disk copy is written
    atomically after the buffer already holds the draft."""

    def open_document_text(self, path: Path) -> str | None:
        return None

    async def apply_to_open_document(self, edit: FileEdit) -> bool:
        return False


class PlanWriteArguments(ArgumentModel):
    content: str = Field(description="the whole plan, Markdown")
    plan_filename: str | None = Field(default=None, description="default PLAN.md")


class ExitPlanModeArguments(ArgumentModel):
    plan_filename: str | None = None


class EnterPlanModeArguments(ArgumentModel):
    reason: str | None = None


PLAN_WRITE = ToolDefinition(
    name="plan_write",
    description=(
        "Write the plan document (Markdown). Replaces its whole content. `plan_filename` is "
        "a name inside the plans directory, default PLAN.md. Maximum 50,000 characters."
    ),
    arguments=PlanWriteArguments,
    safety=Safety.PLAN_FILE,
)

EXIT_PLAN_MODE = ToolDefinition(
    name="exit_plan_mode",
    description=(
        "Submit the plan for the user's approval. Ends your turn; the user approves, "
        "rejects or comments. Call it once the plan is complete."
    ),
    arguments=ExitPlanModeArguments,
    safety=Safety.CONTROL,
    role="agent",
    only_in=WorkMode.PLAN,
    elsewhere="the session is not in plan mode; there is no plan to submit",
)

ENTER_PLAN_MODE = ToolDefinition(
    name="enter_plan_mode",
    description=(
        "Ask to switch to plan mode before a complex change: research read-only and write "
        "a plan for the user to approve."
    ),
    arguments=EnterPlanModeArguments,
    safety=Safety.CONTROL,
    only_in=WorkMode.BUILD,
    elsewhere="the session is already in plan mode",
)


def plan_tools(
    session: Session, drafts: PlanDraftPort, allow_enter_plan_in_yolo: bool
) -> list[Tool]:
    def rel(path: Path) -> str:
        try:
            return str(path.relative_to(session.workspace))
        except ValueError:
            return str(path)

    async def save_plan(
        path: Path, text: str, ctx: ToolContext, in_buffer: bool = False
    ) -> EditResult:
        """Through the edit gate like every other change, as a plan file, to disk — or, when
        the open buffer already holds `text` (`in_buffer`), through the gate only: the
        buffer's disk was made to agree as its editor allows (saved by the client, written
        by the server, or left to the user's own save where the editor would ask about a
        file written behind its buffer)."""
        return await apply_file_edit(
            FileEdit(path=path, new_text=text, old_text=_on_disk(session.workspace, path)),
            session.mode,
            ctx.plans_dir,
            ctx.workspace_roots,
            ctx.editor if in_buffer else _DiskOnly(),
            plan_file=True,
        )

    async def plan_write(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        content = args["content"]
        if len(content) > MAX_PLAN_CHARS:
            return ToolResult.error(
                "plan_too_long",
                f"the plan has {len(content):,} characters; the limit is {MAX_PLAN_CHARS:,}",
            )
        # Each round its own file; an approved plan is never written over.
        checked = session.plan_target(ctx.plans_dir, args.get("plan_filename"))
        if not checked.ok or checked.resolved is None:
            return ToolResult.error("invalid_plan_path", checked.error or "invalid plan path")
        path = Path(checked.resolved)
        try:
            session.plan_drafting(path, Actor.MODEL)
        except TransitionRefused as exc:
            return ToolResult.error("plan_write_refused", str(exc))
        content = _as_plan_file(content, drafts.buffer_text(path), session.workspace, path)
        await drafts.complete(path, content)
        result = await save_plan(path, content, ctx, drafts.buffer_text(path) == content)
        if not result.applied:
            return ToolResult.error("plan_write_refused", result.reason or "refused")
        if drafts.buffer_text(path) is None:
            await drafts.show(path)
        ctx.emit("planDraft", {"uri": path.as_uri(), "chars": len(content), "done": True})
        return ToolResult(
            content=f"Plan written to {rel(path)} ({len(content)} characters). "
            "Call exit_plan_mode when it is complete.",
            data={"path": str(path)},
        )

    async def exit_plan_mode(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        workspace = session.workspace
        # The round's file (as plan_write chose it); an approved plan is not submitted again.
        lexical = session.plan_target(ctx.plans_dir, args.get("plan_filename"))
        if not lexical.ok:
            return ToolResult.error("invalid_plan", lexical.error or "invalid plan")
        name = lexical.name
        # A plan open in a buffer is checked there: an editor that saves only when the user
        # does (coc.nvim) may still have an empty file on disk.
        in_buffer = False
        if lexical.ok and lexical.resolved is not None:
            # The open buffer is the truth: the user may have edited it.
            target = Path(lexical.resolved)
            text = drafts.buffer_text(target)
            if text is not None and text.strip():
                # The disk agrees as the editor allows (its own save, the server's write, or
                # the user's save later), then the gate checks the buffer's text.
                await drafts.complete(target, text)
                saved = await save_plan(target, text, ctx, in_buffer=True)
                if not saved.applied:
                    return ToolResult.error("invalid_plan", f"cannot save the plan: {saved.reason}")
                in_buffer = True
        checked = validate_plan_path(
            ctx.plans_dir, name, must_exist=not in_buffer, workspace=workspace
        )
        if not checked.ok or checked.resolved is None:
            return ToolResult.error("invalid_plan", checked.error or "invalid plan")
        path = Path(checked.resolved)
        text = drafts.buffer_text(path) or None
        if text is None:
            try:
                text = read_text(workspace.resolve(), path) or ""
            except (OSError, UnicodeDecodeError) as exc:
                return ToolResult.error("invalid_plan", f"cannot read the plan: {exc}")
            # A plan the user has not seen in this round (written earlier, or shipped with the
            # repository) is put in front of them before it is offered for approval.
            await drafts.show(path)
        try:
            rev = session.plan_submitted(path, text, Actor.MODEL)
        except TransitionRefused as exc:
            return ToolResult.error("exit_plan_mode_refused", str(exc))
        ctx.emit("planDraft", {"uri": path.as_uri(), "status": "submitted", "revision": rev})
        return ToolResult(
            content=f"Plan {rel(path)} submitted (revision {rev}). Wait for the user's decision.",
            data={"path": str(path), "revision": rev},
            ends_turn=True,
        )

    async def enter_plan_mode(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        if session.mode is WorkMode.PLAN:
            return ToolResult(content="Already in plan mode.")
        if session.permission_mode is PermissionMode.YOLO and not allow_enter_plan_in_yolo:
            return ToolResult.error(
                "tool_not_allowed",
                "entering plan mode is turned off in yolo permission mode",
                tool="enter_plan_mode",
            )
        reason = str(args.get("reason") or "")
        answer = await ctx.user.request_permission(
            PermissionRequest(
                run_id=ctx.run_id,
                tool="enter_plan_mode",
                summary="Switch to plan mode" + (f": {reason}" if reason else ""),
                arguments=args,
            )
        )
        if answer not in ("allow_once", "allow_always"):
            return ToolResult.error("permission_denied", "the user declined to switch to plan mode")
        try:
            session.set_mode(WorkMode.PLAN, Actor.MODEL)
        except TransitionRefused as exc:
            return ToolResult.error("enter_plan_mode_refused", str(exc))
        return ToolResult(content=json.dumps({"mode": "plan", "reason": reason}))

    return [
        Tool(PLAN_WRITE, plan_write),
        Tool(EXIT_PLAN_MODE, exit_plan_mode),
        Tool(ENTER_PLAN_MODE, enter_plan_mode),
    ]
