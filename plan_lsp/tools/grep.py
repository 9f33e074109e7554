"""The `grep` tool: ripgrep when it is on PATH, a pure-Python search otherwise, with the
same output; open buffers are searched as the user sees them.

Both search regular files only and never through a link, as ripgrep does without `-L`:
the Python search opens each file from its workspace root without following a link and
non-blocking (`fs_common.open_workspace_file`), skipping links, FIFOs, devices and sockets;
a `path` that names anything but a folder or a regular file is refused before ripgrep would
open (and block on) it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import shutil
import stat
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from plan_lsp.policy.permissions import glob_to_regex
from plan_lsp.policy.safe_fs import file_kind
from plan_lsp.tools.base import ToolContext, ToolResult
from plan_lsp.tools.fs_common import (
    GREP_CAP,
    GREP_LINE_CHARS,
    GREP_MAX_FILE_BYTES,
    _refused,
    _walk_files,
    looks_binary,
    note,
    open_paths,
    open_text,
    open_workspace_file,
)
from plan_lsp.tools.paths import (
    PathRefused,
    display_path,
    hidden_places,
    inside_any,
    is_in_workspace,
    resolve_path,
)

# One hit: file, 1-based line number, line text.
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


def _disk_text(file: Path, roots: Sequence[Path]) -> str | None:
    """The text of a regular, non-binary file of at most GREP_MAX_FILE_BYTES; None for
    anything else (a link, FIFO, device, socket, a file too large or unreadable)."""
    try:
        with open_workspace_file(file, roots, max_bytes=GREP_MAX_FILE_BYTES) as handle:
            if looks_binary(handle):
                return None
            return handle.read(GREP_MAX_FILE_BYTES + 1).decode("utf-8", errors="replace")
    except (OSError, PathRefused):  # WriteRefused (and FileTooLarge) are OSErrors
        return None


def _python_grep(
    files: list[Path], roots: Sequence[Path], regex: re.Pattern[str], cap: int
) -> list[Match]:
    found: list[Match] = []
    for file in files:
        text = _disk_text(file, roots)
        if text is None:
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
        # Both pipes drained before waiting: asyncio's wait() returns only once every pipe
        # is closed, and a stdout that stopped being read (the cap) is paused, full, and
        # would never reach its end.
        _, err = await asyncio.gather(process.stdout.read(), process.stderr.read())
        stderr = err.decode("utf-8", "replace")
        code = await process.wait()
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
    refusal = _base_refusal(base, ctx.workspace_roots)
    if refusal is not None:
        return refusal
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
            found = await asyncio.to_thread(
                _python_grep, disk, ctx.workspace_roots, regex, GREP_CAP
            )
            for file, text in buffers.items():
                found.extend(_grep_text(file, text, regex, GREP_CAP + 1))
    except GrepFailed as exc:
        return ToolResult.error("grep_failed", str(exc))
    found = _with_open_buffers(ctx, found, base, accept, regex)
    hidden = hidden_places(ctx.workspace_roots)
    if hidden:
        found = [m for m in found if inside_any(m[0].resolve(), hidden) is None]
    capped = len(found) > GREP_CAP
    found = found[:GREP_CAP]
    lines = [_format_match(m, ctx.workspace_roots) for m in found]
    if capped:
        lines.append(note(f"results capped at {GREP_CAP} matches; narrow the pattern or path"))
    if not found:
        lines.append(note("no matches"))
    return ToolResult(content="\n".join(lines), data={"count": len(found), "capped": capped})


def _base_refusal(base: Path, roots: list[Path]) -> ToolResult | None:
    """Why `base` (resolved) cannot be searched: missing, or neither a folder nor a regular
    file (ripgrep would open a FIFO named on its command line and wait for a writer)."""
    shown = display_path(base, roots)
    try:
        mode = base.lstat().st_mode
    except FileNotFoundError:
        return ToolResult.error("not_found", f"{shown} does not exist")
    except OSError as exc:
        return ToolResult.error("read_failed", f"cannot search {shown}: {exc.strerror or exc}")
    if stat.S_ISDIR(mode) or stat.S_ISREG(mode):
        return None
    return ToolResult.error(
        "not_a_regular_file",
        f"{shown} is {file_kind(mode)}, not a folder or a regular file; it cannot be searched",
    )


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
