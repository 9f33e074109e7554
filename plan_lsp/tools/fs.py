"""Read-only file tools: read_file, list_dir, glob, grep.

Paths are confined to the workspace; an open document is read from its buffer, a file on
disk without following a link or blocking (`fs_common.open_workspace_file`).
"""

from __future__ import annotations

import asyncio
import io
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import Field

from plan_lsp.policy.arguments import ArgumentModel
from plan_lsp.policy.glob_match import compile_glob
from plan_lsp.policy.safe_fs import FileTooLarge, WriteRefused
from plan_lsp.policy.safety import PrimaryArgument, Safety, ToolDefinition
from plan_lsp.tools.base import Tool, ToolContext, ToolImpl, ToolResult
from plan_lsp.tools.fs_common import (
    GLOB_CAP,
    GREP_CAP,
    LIST_CAP,
    READ_CAP_BYTES,
    READ_MAX_FILE_BYTES,
    _refused,
    _walk_files,
    looks_binary,
    note,
    open_text,
    open_workspace_file,
    open_workspace_folder,
)
from plan_lsp.tools.grep import grep
from plan_lsp.tools.paths import (
    PathRefused,
    display_path,
    hidden_places,
    inside_any,
    is_in_workspace,
    resolve_path,
)


def _select_lines(
    lines: Iterable[str], start: int, end: int | None, cap: int
) -> tuple[str, int, int | None, bool]:
    """(text, last line shown, total lines or None if unknown, capped)."""
    out: list[str] = []
    size = 0
    last = start - 1
    total = 0
    for number, line in enumerate(lines, 1):
        total = number
        if number < start or (end is not None and number > end):
            continue
        encoded = len(line.encode("utf-8", "replace"))
        if size + encoded > cap:
            if not out:
                out.append(line[:cap])
                last = number
            return "".join(out), last, None, True
        out.append(line)
        size += encoded
        last = number
    return "".join(out), last, total, False


def _disk_lines(handle: BinaryIO, longest: int) -> Iterator[str]:
    """The file's lines (endings kept), each cut after `longest` characters so one huge line
    never fills the memory; a cut line still counts as one."""
    text = io.TextIOWrapper(handle, encoding="utf-8", errors="replace", newline="")
    while piece := text.readline(longest):
        if piece.endswith(("\n", "\r")):
            yield piece
            continue
        rest = piece
        while rest and not rest.endswith(("\n", "\r")):
            rest = text.readline(longest)  # skip the remainder of the line
        yield piece


class _Refusal(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _read_disk(
    path: Path, roots: list[Path], shown: str, start: int, end: int | None
) -> tuple[str, int, int | None, bool]:
    try:
        with open_workspace_file(path, roots, max_bytes=READ_MAX_FILE_BYTES) as handle:
            if looks_binary(handle):
                raise _Refusal(
                    "binary_file", f"{shown} looks like a binary file; it cannot be read as text"
                )
            lines = _disk_lines(handle, READ_CAP_BYTES + 1)
            return _select_lines(lines, start, end, READ_CAP_BYTES)
    except FileNotFoundError:
        raise _Refusal("not_found", f"{shown} does not exist") from None
    except FileTooLarge as exc:
        raise _Refusal(
            "too_large", f"{exc}; search it with grep or read parts with bash (head, tail, sed)"
        ) from None
    except WriteRefused as exc:
        raise _Refusal("not_a_regular_file", f"{exc}; only regular files can be read") from None


async def read_file(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    try:
        path = resolve_path(args.get("path"), ctx.workspace_roots)
    except PathRefused as exc:
        return _refused(exc)
    start = int(args.get("start_line") or 1)
    end = args.get("end_line")
    shown = display_path(path, ctx.workspace_roots)
    if end is not None and int(end) < start:
        return ToolResult.error(
            "invalid_arguments", f"end_line ({end}) is before start_line ({start})"
        )
    buffer = open_text(ctx, path)
    if buffer is not None:
        text, last, total, capped = _select_lines(
            buffer.splitlines(keepends=True), start, end, READ_CAP_BYTES
        )
    else:
        if path.is_dir():
            return ToolResult.error("is_directory", f"{shown} is a directory; use list_dir")
        try:
            text, last, total, capped = await asyncio.to_thread(
                _read_disk, path, ctx.workspace_roots, shown, start, end
            )
        except _Refusal as exc:
            return ToolResult.error(exc.code, str(exc))
        except (OSError, PathRefused) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            return ToolResult.error("read_failed", f"cannot read {shown}: {reason}")
    if total is not None and total == 0:
        return ToolResult(content=note(f"{shown} is empty"), data={"path": shown, "lines": 0})
    if total is not None and start > total:
        return ToolResult.error(
            "invalid_arguments", f"start_line {start} is past the end of {shown} ({total} lines)"
        )
    data: dict[str, Any] = {"path": shown, "start_line": start, "end_line": last}
    if total is not None:
        data["total_lines"] = total
    notes: list[str] = []
    if capped:
        notes.append(
            f"output capped at {READ_CAP_BYTES // 1024} KB: showing lines {start}-{last}; "
            f"read on with start_line={last + 1}"
        )
        data["truncated"] = True
    elif total is not None and (start > 1 or last < total):
        notes.append(f"lines {start}-{last} of {total}")
    content = text
    if notes:
        content = text + ("" if text.endswith("\n") else "\n") + note("; ".join(notes))
    return ToolResult(content=content, data=data)


# -- list_dir --------------------------------------------------------------------------------


async def list_dir(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    try:
        path = resolve_path(args.get("path"), ctx.workspace_roots)
    except PathRefused as exc:
        return _refused(exc)
    shown = display_path(path, ctx.workspace_roots)
    if not path.is_dir():
        what = "is a file; use read_file" if path.exists() else "does not exist"
        return ToolResult.error("not_a_directory", f"{shown} {what}")
    try:
        names = await asyncio.to_thread(_list_names, path, ctx.workspace_roots)
    except (OSError, PathRefused) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        return ToolResult.error("read_failed", f"cannot list {shown}: {reason}")
    lines = names[:LIST_CAP]
    if len(names) > LIST_CAP:
        lines.append(note(f"{len(names) - LIST_CAP} more entries not shown"))
    if not names:
        lines.append(note(f"{shown} is empty"))
    return ToolResult(content="\n".join(lines), data={"path": shown, "count": len(names)})


def _list_names(path: Path, roots: list[Path]) -> list[str]:
    """The folder's entries, sorted, folders marked with '/'; listed through a descriptor
    reached without following a link, and a link listed as itself (never looked through).
    The places plan mode hides (`hidden_places`: the home's dot entries when a root holds
    the home, credentials) are left out."""
    hidden = hidden_places(roots)
    with open_workspace_folder(path, roots) as fd, os.scandir(fd) as scan:
        entries = sorted(scan, key=lambda e: e.name)
        return [
            e.name + ("/" if e.is_dir(follow_symlinks=False) else "")
            for e in entries
            if not _hidden_entry(path / e.name, hidden)
        ]


def _hidden_entry(entry: Path, hidden: tuple[Path, ...]) -> bool:
    """`entry` (in a real folder) is, or links into, a place the file tools never show."""
    if not hidden:
        return False
    return inside_any(entry, hidden) is not None or (
        entry.is_symlink() and inside_any(Path(os.path.realpath(entry)), hidden) is not None
    )


# -- glob ------------------------------------------------------------------------------------


def _glob_files(base: Path, pattern: str, roots: list[Path], cap: int) -> tuple[list[Path], bool]:
    regex = compile_glob(pattern, path_mode=True)
    hidden = hidden_places(roots)
    found: list[Path] = []
    for file in _walk_files(base):
        if not regex.match(file.relative_to(base).as_posix()):
            continue
        if hidden and inside_any(file.resolve(), hidden) is not None:
            continue
        if file.is_symlink() and not is_in_workspace(file.resolve(), roots):
            continue
        if len(found) == cap:
            return found, True
        found.append(file)
    return found, False


async def glob_tool(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    pattern = str(args.get("pattern", "")).strip()
    while pattern.startswith("./"):
        pattern = pattern[2:]
    if not pattern or "\x00" in pattern:
        return ToolResult.error("invalid_arguments", "pattern must be a non-empty glob")
    if pattern.startswith(("/", "~")) or ".." in pattern.split("/"):
        return ToolResult.error(
            "invalid_arguments",
            f"pattern {pattern!r} must be relative to `path` and stay inside it "
            "(no leading '/', '~' or '..')",
        )
    try:
        base = resolve_path(args.get("path"), ctx.workspace_roots)
    except PathRefused as exc:
        return _refused(exc)
    if not base.is_dir():
        return ToolResult.error(
            "not_a_directory", f"{display_path(base, ctx.workspace_roots)} is not a directory"
        )
    files, capped = await asyncio.to_thread(
        _glob_files, base, pattern, ctx.workspace_roots, GLOB_CAP
    )
    lines = [display_path(f, ctx.workspace_roots) for f in files]
    if capped:
        lines.append(note(f"results capped at {GLOB_CAP}; narrow the pattern or path"))
    if not files:
        lines.append(note(f"no files match {pattern!r}"))
    return ToolResult(content="\n".join(lines), data={"count": len(files), "capped": capped})


_PATH_WORDS = "Path relative to the workspace folder."
_PATH = PrimaryArgument(name="path", kind="path")


class ReadFileArguments(ArgumentModel):
    path: str = Field(description=_PATH_WORDS)
    start_line: int | None = Field(default=None, ge=1)
    end_line: int | None = Field(default=None, ge=1)


class ListDirArguments(ArgumentModel):
    path: str | None = Field(default=None, description=_PATH_WORDS)


class GlobArguments(ArgumentModel):
    pattern: str = Field(min_length=1)
    path: str | None = Field(default=None, description=_PATH_WORDS)


class GrepArguments(ArgumentModel):
    pattern: str = Field(min_length=1)
    path: str | None = Field(default=None, description=_PATH_WORDS)
    glob: str | None = None
    ignore_case: bool | None = None


def _read_only_tool(
    name: str, description: str, arguments: type[ArgumentModel], run: ToolImpl, timeout_s: float
) -> Tool:
    """A read-only tool whose permission rules are matched against its `path`."""
    definition = ToolDefinition(
        name=name,
        description=description,
        arguments=arguments,
        safety=Safety.READ_ONLY,
        timeout_s=timeout_s,
        primary_argument=_PATH,
    )
    return Tool(definition, run)


READ_FILE_TOOL = _read_only_tool(
    "read_file",
    "Read a text file in the workspace. Optional 1-based start_line/end_line select a range. "
    "Output is capped at 256 KB. Open editor buffers are read as shown.",
    ReadFileArguments,
    read_file,
    30.0,
)
LIST_DIR_TOOL = _read_only_tool(
    "list_dir",
    "List a directory in the workspace (directories end with '/').",
    ListDirArguments,
    list_dir,
    30.0,
)
GLOB_TOOL = _read_only_tool(
    "glob",
    "Find files by glob pattern relative to `path` (default: the workspace). "
    "'*' stays within a directory, '**' spans directories, e.g. '**/*.py'.",
    GlobArguments,
    glob_tool,
    60.0,
)
GREP_TOOL = _read_only_tool(
    "grep",
    "Search file contents with a regular expression. Output lines are 'path:line:text'. "
    "`glob` filters files (e.g. '*.py'); `ignore_case` for case-insensitive search. "
    f"At most {GREP_CAP} matches.",
    GrepArguments,
    grep,
    60.0,
)

FS_TOOLS = (READ_FILE_TOOL, LIST_DIR_TOOL, GLOB_TOOL, GREP_TOOL)
