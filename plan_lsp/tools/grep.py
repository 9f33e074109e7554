"""The `grep` tool: ripgrep when on PATH, else RE2 in the server, with the same output; open
buffers are searched as the user sees them (RE2, `grep_engine`). Only regular files, never
through a link (as ripgrep without `-L`); a `path` naming anything but a folder or a regular
file is refused before ripgrep would block on it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from plan_lsp.policy.glob_match import compile_glob
from plan_lsp.policy.safe_fs import file_kind
from plan_lsp.tools.base import ToolContext, ToolResult
from plan_lsp.tools.fs_common import (
    GREP_CAP,
    GREP_LINE_CHARS,
    _refused,
    _walk_files,
    note,
    open_paths,
    open_text,
)
from plan_lsp.tools.grep_engine import GrepFailed, Match, python_search
from plan_lsp.tools.paths import (
    PathRefused,
    display_path,
    hidden_places,
    inside_any,
    is_in_workspace,
    resolve_path,
)


def _file_filter(glob: str | None, base: Path) -> Callable[[Path], bool]:
    """ripgrep-style `-g`: a glob without '/' matches the file name at any depth; a leading
    '!' excludes."""
    if not glob:
        return lambda _path: True
    negate = glob.startswith("!")
    body = glob[1:] if negate else glob
    regex = compile_glob(body.lstrip("/"), path_mode=True)
    by_name = "/" not in body.strip("/")

    def accept(path: Path) -> bool:
        inside = not by_name and path.is_relative_to(base)
        subject = path.relative_to(base).as_posix() if inside else path.name
        return bool(regex.match(subject)) != negate

    return accept


async def _ripgrep(
    rg: str,
    pattern: str,
    base: Path,
    glob: str | None,
    ignore_case: bool,
    cap: int,
    hidden: tuple[Path, ...],
) -> list[Match]:
    command = [rg, "--json", "--hidden", "-g", "!.git", *(["-i"] if ignore_case else [])]
    command += [*(["-g", glob] if glob else []), "-e", pattern, "--", str(base)]
    # Unsorted, rg searches on every core; sorting the few matches here is cheap. Only when
    # the cap cuts the list is rg asked again in path order, so which matches are kept
    # does not depend on thread timing.
    found = await _ripgrep_run(command, cap, hidden)
    if len(found) > cap:
        found = await _ripgrep_run([rg, "--sort", "path", *command[1:]], cap, hidden)
    return sorted(found, key=lambda m: (str(m[0]), m[1]))


async def _ripgrep_run(command: list[str], cap: int, hidden: tuple[Path, ...]) -> list[Match]:
    """Matches up to `cap` + 1; those in a `hidden` place are dropped as they come, before
    they count (a home opened as the workspace has many of them, sorted first)."""
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
            path = Path(path_text)
            if hidden and inside_any(path.resolve(), hidden) is not None:
                continue
            found.append((path, int(data["line_number"]), line_text.rstrip("\r\n")))
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
    accept = _file_filter(glob, base)
    rg = shutil.which("rg")
    roots = ctx.workspace_roots
    hidden = hidden_places(ctx.workspace_roots)
    try:
        if rg is not None:
            found = await _ripgrep(rg, pattern, base, glob, ignore_case, GREP_CAP, hidden)
        else:
            walked = await asyncio.to_thread(lambda: list(_walk_files(base)))
            disk = [
                f
                for f in walked
                if accept(f)
                and open_text(ctx, f) is None
                and not (hidden and inside_any(f.resolve(), hidden) is not None)
            ]
            found = await python_search(pattern, ignore_case, disk, roots, {}, GREP_CAP)
        found = await _with_open_buffers(ctx, found, base, accept, pattern, ignore_case)
    except GrepFailed as exc:
        return ToolResult.error("grep_failed", str(exc))
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


async def _with_open_buffers(
    ctx: ToolContext,
    found: list[Match],
    base: Path,
    accept: Callable[[Path], bool],
    pattern: str,
    ignore_case: bool,
) -> list[Match]:
    """Replace matches in open documents by matches in their buffer text (by RE2)."""
    by_file: dict[Path, list[Match]] = {}
    for match in found:
        by_file.setdefault(match[0], []).append(match)
    candidates = set(by_file)
    for path in open_paths(ctx) or []:
        resolved = path.resolve()
        inside = resolved == base or resolved.is_relative_to(base)
        if inside and is_in_workspace(resolved, ctx.workspace_roots) and accept(resolved):
            candidates.add(resolved)
    buffers = {p: text for p in candidates if (text := open_text(ctx, p)) is not None}
    if buffers:
        for path in buffers:
            by_file[path] = []
        roots = ctx.workspace_roots
        for match in await python_search(pattern, ignore_case, [], roots, buffers, GREP_CAP):
            by_file[match[0]].append(match)
    merged: list[Match] = []
    for path in sorted(by_file, key=lambda p: p.as_posix()):
        merged.extend(by_file[path])
    return merged


def _format_match(match: Match, roots: list[Path]) -> str:
    path, number, text = match
    if len(text) > GREP_LINE_CHARS:
        text = text[:GREP_LINE_CHARS] + "…"
    return f"{display_path(path, roots)}:{number}:{text}"
