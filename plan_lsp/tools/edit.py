"""File-changing tools: write_file and edit_file.

Both hand the new text to the workspace-edit gate with the work mode of that moment (no mode
provider: plan mode, fail closed), so a call past the execution gate still cannot write in
plan mode; `.plan-lsp/` is refused before the file is read. One planner per tool computes
the change the permission preview shows, and exactly that is written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from plan_lsp.policy.arguments import ArgumentModel
from plan_lsp.policy.ports import FileChange, FileEdit
from plan_lsp.policy.safe_fs import disk_text, read_text
from plan_lsp.policy.safety import PrimaryArgument, Safety, ToolDefinition
from plan_lsp.policy.server_dir import server_dir_refusal
from plan_lsp.policy.workspace_edit import anchor_of, apply_file_edit
from plan_lsp.protocol.state import WorkMode
from plan_lsp.tools.base import Tool, ToolContext, ToolResult
from plan_lsp.tools.fs_common import open_text
from plan_lsp.tools.paths import PathRefused, display_path, resolve_path

# `ctx.extra[MODE_PROVIDER_KEY]` is a zero-argument callable returning the current WorkMode;
# the tool runner sets it for every call.
MODE_PROVIDER_KEY = "work_mode"

M = TypeVar("M", bound=BaseModel)


def current_mode(ctx: ToolContext) -> WorkMode:
    provider: Callable[[], object] | None = ctx.extra.get(MODE_PROVIDER_KEY)
    if callable(provider):
        try:
            mode = provider()
        except Exception:
            return WorkMode.PLAN
        if isinstance(mode, WorkMode):
            return mode
    return WorkMode.PLAN


def _current_text(ctx: ToolContext, path: Path) -> str | None:
    """What the user sees: the open buffer, else the disk, else None (no such file)."""
    buffer = open_text(ctx, path)
    if buffer is not None:
        return buffer
    anchor = anchor_of(path, ctx.workspace_roots)
    # Read like the gate writes: no link followed, no FIFO blocked on.
    return read_text(anchor, path) if anchor is not None else None


def _count(text: str, needle: str) -> int:
    """Occurrences of `needle` in `text`, overlapping ones included."""
    count, start = 0, text.find(needle)
    while start != -1:
        count += 1
        start = text.find(needle, start + 1)
    return count


async def _apply(ctx: ToolContext, path: Path, new_text: str, old_text: str | None) -> ToolResult:
    shown = display_path(path, ctx.workspace_roots)
    result = await apply_file_edit(
        FileEdit(path=path, new_text=new_text, old_text=old_text),
        current_mode(ctx),
        ctx.plans_dir,
        ctx.workspace_roots,
        ctx.editor,
    )
    if not result.applied:
        return ToolResult.error("edit_refused", result.reason, path=shown)
    lines = len(new_text.splitlines())
    verb = "created" if result.created else "updated"
    extra = " (merged with changes made meanwhile)" if result.rebased else ""
    on_disk = result.via != "editor" or _disk_holds(path, result.text)
    if not on_disk:
        # The buffer had unsaved changes of the user's: they are never saved behind their back.
        extra += (
            "; the change is in the editor's buffer only: the file has unsaved changes there, "
            "so commands reading the file from disk see the old text until the user saves it"
        )
    return ToolResult(
        content=f"{verb} {shown} ({lines} line{'' if lines == 1 else 's'}){extra}",
        data={"path": shown, "via": result.via, "created": result.created, "onDisk": on_disk},
    )


def _disk_holds(path: Path, text: str | None) -> bool:
    current = disk_text(path)  # never through a link, never blocked on
    return current is not None and current == text


# `ctx.extra[ASKED_CHANGE_KEY]` is the `FileChange` the user was shown and allowed, when the
# call asked for permission: the tool writes that change, not one computed again (if the
# user typed in the file meanwhile, the change is replayed onto their text where the two
# touch different lines, and refused where they meet: `policy.workspace_edit`).
ASKED_CHANGE_KEY = "asked_change"


class WriteFileArguments(ArgumentModel):
    path: str = Field(description="Path relative to the workspace.")
    content: str


class EditFileArguments(ArgumentModel):
    path: str = Field(description="Path relative to the workspace.")
    old_text: str = Field(min_length=1)
    new_text: str


@dataclass(frozen=True)
class PlannedChange:
    """What a call will write: computed once, by the code below, for both the permission
    request and the write."""

    path: Path
    before: str | None
    after: str

    def as_change(self) -> FileChange:
        return FileChange(path=self.path, before=self.before, after=self.after)


def _target(path_argument: str, ctx: ToolContext) -> tuple[Path, str | None] | ToolResult:
    try:
        path = resolve_path(path_argument, ctx.workspace_roots)
    except PathRefused as exc:
        return ToolResult.error("path_refused", str(exc))
    shown = display_path(path, ctx.workspace_roots)
    refusal = server_dir_refusal(path, ctx.workspace_roots, shown)
    if refusal is not None:
        return ToolResult.error("edit_refused", refusal, path=shown)
    if path.is_dir():
        return ToolResult.error("is_directory", f"{shown} is a directory")
    try:
        return path, _current_text(ctx, path)
    except UnicodeDecodeError:
        return ToolResult.error("binary_file", f"{shown} is not a UTF-8 text file")
    except OSError as exc:
        return ToolResult.error("read_failed", f"cannot read {shown}: {exc.strerror or exc}")


def edited_text(current: str, old: str, new: str) -> str | tuple[str, int]:
    """`current` with the one occurrence of `old` replaced by `new`; when `old` does not
    occur exactly once, (the error code, the number of occurrences). A file with CRLF line
    endings also matches `old` written with LF (the model saw LF), and gets `new` in CRLF."""
    count = _count(current, old)
    if count == 0 and "\r\n" in current and "\r\n" not in old:
        # The model saw LF line endings; the file has CRLF.
        crlf_old, crlf_new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        if _count(current, crlf_old) > 0:
            old, new, count = crlf_old, crlf_new, _count(current, crlf_old)
    if count == 0:
        return ("old_text_not_found", 0)
    if count > 1:
        return ("old_text_ambiguous", count)
    return current.replace(old, new, 1)


def plan_write_file(args: WriteFileArguments, ctx: ToolContext) -> PlannedChange | ToolResult:
    target = _target(args.path, ctx)
    if isinstance(target, ToolResult):
        return target
    path, current = target
    return PlannedChange(path, current, args.content)


def plan_edit_file(args: EditFileArguments, ctx: ToolContext) -> PlannedChange | ToolResult:
    if args.old_text == args.new_text:
        return ToolResult.error("no_change", "old_text and new_text are identical")
    target = _target(args.path, ctx)
    if isinstance(target, ToolResult):
        return target
    path, current = target
    shown = display_path(path, ctx.workspace_roots)
    if current is None:
        return ToolResult.error("not_found", f"{shown} does not exist; use write_file to create it")
    after = edited_text(current, args.old_text, args.new_text)
    if isinstance(after, str):
        return PlannedChange(path, current, after)
    code, count = after
    if code == "old_text_not_found":
        return ToolResult.error(
            code,
            f"old_text was not found in {shown}; read the file again and copy the text "
            "exactly, including whitespace and indentation",
            path=shown,
        )
    return ToolResult.error(
        code,
        f"old_text occurs {count} times in {shown}; include more surrounding lines so it "
        "matches exactly once",
        path=shown,
        occurrences=count,
    )


Planner = Callable[[M, ToolContext], PlannedChange | ToolResult]


_PATH = PrimaryArgument(name="path", kind="path")


def _edit_tool(name: str, description: str, model: type[M], planner: Planner[M]) -> Tool:
    """A file-changing tool whose implementation and preview one planner computes."""

    # Both are called with the arguments the runner checked against `model`.
    async def run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        asked = ctx.extra.get(ASKED_CHANGE_KEY)
        if isinstance(asked, FileChange):
            return await _apply(ctx, asked.path, asked.after, asked.before)
        planned = planner(model.model_validate(args), ctx)
        if isinstance(planned, ToolResult):
            return planned
        return await _apply(ctx, planned.path, planned.after, planned.before)

    async def preview(args: dict[str, Any], ctx: ToolContext) -> FileChange | None:
        planned = planner(model.model_validate(args), ctx)
        return None if isinstance(planned, ToolResult) else planned.as_change()

    definition = ToolDefinition(
        name=name,
        description=description,
        arguments=model,
        safety=Safety.SIDE_EFFECT,
        timeout_s=60.0,
        primary_argument=_PATH,
        role="edit",
    )
    return Tool(definition, run, preview=preview)


WRITE_FILE_TOOL = _edit_tool(
    "write_file",
    "Create or overwrite a file in the workspace with `content`. Prefer edit_file for changes "
    "to existing files.",
    WriteFileArguments,
    plan_write_file,
)
EDIT_FILE_TOOL = _edit_tool(
    "edit_file",
    "Replace one exact occurrence of `old_text` with `new_text` in a workspace file. old_text "
    "must match exactly once (whitespace included); add surrounding lines to make it unique.",
    EditFileArguments,
    plan_edit_file,
)
EDIT_TOOLS = (WRITE_FILE_TOOL, EDIT_FILE_TOOL)
