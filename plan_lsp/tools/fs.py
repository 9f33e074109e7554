"""Read-only file tools: read_file, list_dir, glob, grep.

Every path is confined to the workspace (`paths.resolve_path`). Reads see what the user
sees: when the client has a document open, its buffer text is read instead of the disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from plan_lsp.policy.permissions import glob_to_regex
from plan_lsp.policy.safety import Safety, ToolDefinition
from plan_lsp.tools.base import Tool, ToolContext, ToolResult
from plan_lsp.tools.paths import PathRefused, display_path, is_in_workspace, resolve_path

READ_CAP_BYTES = 256 * 1024
BINARY_SNIFF_BYTES = 8192
LIST_CAP = 1000
GLOB_CAP = 500
GREP_CAP = 200
GREP_LINE_CHARS = 400
GREP_MAX_FILE_BYTES = 10 * 1024 * 1024
# Directories never descended into by glob and grep.
PRUNED_DIRS = frozenset({".git"})


def note(text: str) -> str:
    """A remark from the tool, kept apart from file content."""
    return f"[plan-lsp: {text}]"


def open_text(ctx: ToolContext, path: Path) -> str | None:
    """The open buffer's text for `path`, if the client has it open."""
    try:
        return ctx.editor.open_document_text(path)
    except Exception:  # an editor hiccup means "read the disk"
        return None


def open_paths(ctx: ToolContext) -> list[Path] | None:
    """Paths of all open documents, when the editor can enumerate them."""
    lister = getattr(ctx.editor, "open_document_paths", None)
    if lister is None:
        return None
    try:
        return [Path(p) for p in lister()]
    except Exception:
        return None


def looks_binary(path: Path) -> bool:
    with path.open("rb") as handle:
        return b"\x00" in handle.read(BINARY_SNIFF_BYTES)


def _refused(exc: PathRefused) -> ToolResult:
    return ToolResult.error("path_refused", str(exc))


# -- read_file -------------------------------------------------------------------------------


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


def _disk_lines(path: Path) -> Iterator[str]:
    with path.open(encoding="utf-8", errors="replace", newline="") as handle:
        yield from handle


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
        if not path.exists():
            return ToolResult.error("not_found", f"{shown} does not exist")
        if path.is_dir():
            return ToolResult.error("is_directory", f"{shown} is a directory; use list_dir")
        try:
            if await asyncio.to_thread(looks_binary, path):
                return ToolResult.error(
                    "binary_file", f"{shown} looks like a binary file; it cannot be read as text"
                )
            text, last, total, capped = await asyncio.to_thread(
                lambda: _select_lines(_disk_lines(path), start, end, READ_CAP_BYTES)
            )
        except OSError as exc:
            return ToolResult.error("read_failed", f"cannot read {shown}: {exc.strerror or exc}")
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
        entries = sorted(os.scandir(path), key=lambda e: e.name)
    except OSError as exc:
        return ToolResult.error("read_failed", f"cannot list {shown}: {exc.strerror or exc}")
    names = [e.name + ("/" if e.is_dir() else "") for e in entries]
    lines = names[:LIST_CAP]
    if len(names) > LIST_CAP:
        lines.append(note(f"{len(names) - LIST_CAP} more entries not shown"))
    if not names:
        lines.append(note(f"{shown} is empty"))
    return ToolResult(content="\n".join(lines), data={"path": shown, "count": len(names)})


# -- glob ------------------------------------------------------------------------------------


def _walk_files(base: Path) -> Iterator[Path]:
    if base.is_file():
        yield base
        return
    for directory, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d not in PRUNED_DIRS)
        for name in sorted(filenames):
            yield Path(directory) / name


def _glob_files(base: Path, pattern: str, roots: list[Path], cap: int) -> tuple[list[Path], bool]:
    regex = glob_to_regex(pattern, path_mode=True)
    found: list[Path] = []
    for file in _walk_files(base):
        if not regex.match(file.relative_to(base).as_posix()):
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


# -- grep ------------------------------------------------------------------------------------

Match = tuple[Path, int, str]


class GrepFailed(Exception):
    pass


def _file_filter(glob: str | None, base: Path) -> Callable[[Path], bool]:
    """ripgrep-style `-g`: a glob without '/' matches the file name at any depth; a leading
    '!' excludes."""
    if not glob:
        return lambda _path: True
    negate = glob.startswith("!")
    body = glob[1:] if negate else glob
    regex = glob_to_regex(body.lstrip("/"), path_mode=True)
    by_name = "/" not in body.strip("/")

    def accept(path: Path) -> bool:
        subject = path.name if by_name else _rel_or_name(path, base)
        return bool(regex.match(subject)) != negate

    return accept


def _rel_or_name(path: Path, base: Path) -> str:
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return path.name


def _grep_text(path: Path, text: str, regex: re.Pattern[str], limit: int) -> list[Match]:
    found: list[Match] = []
    for number, line in enumerate(text.splitlines(), 1):
        if regex.search(line):
            found.append((path, number, line))
            if len(found) >= limit:
                break
    return found


def _python_grep(files: list[Path], regex: re.Pattern[str], cap: int) -> list[Match]:
    found: list[Match] = []
    for file in files:
        try:
            if file.stat().st_size > GREP_MAX_FILE_BYTES or looks_binary(file):
                continue
            text = file.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        found.extend(_grep_text(file, text, regex, cap + 1 - len(found)))
        if len(found) > cap:
            break
    return found


async def _ripgrep(
    rg: str, pattern: str, base: Path, glob: str | None, ignore_case: bool, cap: int
) -> list[Match]:
    # Unsorted, rg searches on every core; sorting the few matches here is cheap. Only when
    # the cap cuts the list is rg asked again in path order, so which matches are kept
    # does not depend on thread timing.
    found = await _ripgrep_run(rg, pattern, base, glob, ignore_case, cap, sort=False)
    if len(found) > cap:
        found = await _ripgrep_run(rg, pattern, base, glob, ignore_case, cap, sort=True)
    return sorted(found, key=lambda m: (str(m[0]), m[1]))


async def _ripgrep_run(
    rg: str,
    pattern: str,
    base: Path,
    glob: str | None,
    ignore_case: bool,
    cap: int,
    *,
    sort: bool,
) -> list[Match]:
    command = [rg, "--json", "--hidden", "-g", "!.git"]
    if sort:
        command += ["--sort", "path"]
    if ignore_case:
        command.append("-i")
    if glob:
        command += ["-g", glob]
    command += ["-e", pattern, "--", str(base)]
    process = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    found: list[Match] = []
    assert process.stdout is not None and process.stderr is not None
    read_all = False
    try:
        async for raw in process.stdout:
            event = json.loads(raw)
            if event.get("type") != "match":
                continue
            data = event["data"]
            path_text = data["path"].get("text")
            line_text = data["lines"].get("text")
            if path_text is None or line_text is None:
                continue  # not UTF-8; skipped like binary files
            found.append((Path(path_text), int(data["line_number"]), line_text.rstrip("\r\n")))
            if len(found) > cap:
                break
        else:
            read_all = True
    finally:
        if not read_all and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
        stderr = (await process.stderr.read()).decode("utf-8", "replace")
        code = await process.wait()
        await process.stdout.read()  # drain and let the pipe close now, not at collection
    if code == 2 and not found:
        first = next((ln for ln in stderr.splitlines() if ln.strip()), "ripgrep failed")
        raise GrepFailed(first)
    return found


async def grep(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    pattern = args.get("pattern")
    if not isinstance(pattern, str) or not pattern or "\x00" in pattern:
        return ToolResult.error("invalid_arguments", "pattern must be a non-empty regex")
    glob = args.get("glob") or None
    ignore_case = bool(args.get("ignore_case", False))
    try:
        base = resolve_path(args.get("path"), ctx.workspace_roots)
    except PathRefused as exc:
        return _refused(exc)
    if not base.exists():
        return ToolResult.error(
            "not_found", f"{display_path(base, ctx.workspace_roots)} does not exist"
        )
    try:
        regex: re.Pattern[str] | None = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error:
        regex = None
    accept = _file_filter(glob, base)
    rg = shutil.which("rg")
    try:
        if rg is not None:
            found = await _ripgrep(rg, pattern, base, glob, ignore_case, GREP_CAP)
        else:
            if regex is None:
                return ToolResult.error("invalid_pattern", f"{pattern!r} is not a valid regex")
            walked = await asyncio.to_thread(lambda: list(_walk_files(base)))
            files = [f for f in walked if accept(f)]
            buffers = {f: t for f in files if (t := open_text(ctx, f)) is not None}
            disk = [f for f in files if f not in buffers]
            found = await asyncio.to_thread(_python_grep, disk, regex, GREP_CAP)
            for file, text in buffers.items():
                found.extend(_grep_text(file, text, regex, GREP_CAP + 1))
    except GrepFailed as exc:
        return ToolResult.error("grep_failed", str(exc))
    found = _with_open_buffers(ctx, found, base, accept, regex)
    capped = len(found) > GREP_CAP
    found = found[:GREP_CAP]
    lines = [_format_match(m, ctx.workspace_roots) for m in found]
    if capped:
        lines.append(note(f"results capped at {GREP_CAP} matches; narrow the pattern or path"))
    if not found:
        lines.append(note("no matches"))
    return ToolResult(content="\n".join(lines), data={"count": len(found), "capped": capped})


def _with_open_buffers(
    ctx: ToolContext,
    found: list[Match],
    base: Path,
    accept: Callable[[Path], bool],
    regex: re.Pattern[str] | None,
) -> list[Match]:
    """Replace matches in open documents by matches in their buffer text."""
    if regex is None:
        return found
    by_file: dict[Path, list[Match]] = {}
    for match in found:
        by_file.setdefault(match[0], []).append(match)
    candidates = set(by_file)
    for path in open_paths(ctx) or []:
        resolved = path.resolve()
        inside = resolved == base or resolved.is_relative_to(base)
        if inside and is_in_workspace(resolved, ctx.workspace_roots) and accept(resolved):
            candidates.add(resolved)
    for path in candidates:
        buffer = open_text(ctx, path)
        if buffer is not None:
            by_file[path] = _grep_text(path, buffer, regex, GREP_CAP + 1)
    merged: list[Match] = []
    for path in sorted(by_file, key=lambda p: p.as_posix()):
        merged.extend(by_file[path])
    return merged


def _format_match(match: Match, roots: list[Path]) -> str:
    path, number, text = match
    if len(text) > GREP_LINE_CHARS:
        text = text[:GREP_LINE_CHARS] + "…"
    return f"{display_path(path, roots)}:{number}:{text}"


# -- definitions -----------------------------------------------------------------------------

_PATH = {"type": "string", "description": "Path relative to the workspace folder."}

READ_FILE_TOOL = Tool(
    ToolDefinition(
        name="read_file",
        description=(
            "Read a text file in the workspace. Optional 1-based start_line/end_line select "
            "a range. Output is capped at 256 KB. Open editor buffers are read as shown."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "path": _PATH,
                "start_line": {"type": "integer", "minimum": 1},
                "end_line": {"type": "integer", "minimum": 1},
            },
            "required": ["path"],
            "additionalProperties": False,
        },
        safety=Safety.READ_ONLY,
        timeout_s=30.0,
    ),
    read_file,
)

LIST_DIR_TOOL = Tool(
    ToolDefinition(
        name="list_dir",
        description="List a directory in the workspace (directories end with '/').",
        input_schema={
            "type": "object",
            "properties": {"path": _PATH},
            "additionalProperties": False,
        },
        safety=Safety.READ_ONLY,
        timeout_s=30.0,
    ),
    list_dir,
)

GLOB_TOOL = Tool(
    ToolDefinition(
        name="glob",
        description=(
            "Find files by glob pattern relative to `path` (default: the workspace). "
            "'*' stays within a directory, '**' spans directories, e.g. '**/*.py'."
        ),
        input_schema={
            "type": "object",
            "properties": {"pattern": {"type": "string", "minLength": 1}, "path": _PATH},
            "required": ["pattern"],
            "additionalProperties": False,
        },
        safety=Safety.READ_ONLY,
        timeout_s=60.0,
    ),
    glob_tool,
)

GREP_TOOL = Tool(
    ToolDefinition(
        name="grep",
        description=(
            "Search file contents with a regular expression. Output lines are "
            "'path:line:text'. `glob` filters files (e.g. '*.py'); `ignore_case` for "
            f"case-insensitive search. At most {GREP_CAP} matches."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "minLength": 1},
                "path": _PATH,
                "glob": {"type": "string"},
                "ignore_case": {"type": "boolean"},
            },
            "required": ["pattern"],
            "additionalProperties": False,
        },
        safety=Safety.READ_ONLY,
        timeout_s=60.0,
    ),
    grep,
)

FS_TOOLS = (READ_FILE_TOOL, LIST_DIR_TOOL, GLOB_TOOL, GREP_TOOL)
