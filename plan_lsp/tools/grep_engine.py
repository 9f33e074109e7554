"""Where a model's grep pattern is matched: never by a backtracking engine in the server.

The pattern may be prompt-injected and `re` backtracks (`(a+)+$` runs for hours), so files
on disk go to ripgrep, and open buffers (and the disk without ripgrep) to RE2 in a worker
thread: linear time, ripgrep's default dialect; a pattern RE2 refuses is an error saying why.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import re2

from plan_lsp.tools.fs_common import GREP_MAX_FILE_BYTES, looks_binary, open_workspace_file
from plan_lsp.tools.paths import PathRefused

# One hit: file, 1-based line number, line text.
Match = tuple[Path, int, str]


class GrepFailed(Exception):
    pass


def _compile(pattern: str, ignore_case: bool) -> Any:
    """The pattern for RE2; a pattern RE2 refuses (as ripgrep would) is a GrepFailed naming it."""
    options = re2.Options()
    options.case_sensitive = not ignore_case
    options.log_errors = False
    try:
        return re2.compile(pattern.encode("utf-8", "surrogatepass"), options)
    except re2.error as exc:
        why = exc.args[0].decode("utf-8", "replace") if exc.args else str(exc)
        raise GrepFailed(
            f"{pattern!r} is not a valid regex: {why} (the search uses ripgrep's dialect: "
            "no backreferences or lookaround)"
        ) from None


def _grep_text(path: Path, text: str, regex: Any, limit: int) -> list[Match]:
    found: list[Match] = []
    for number, line in enumerate(text.splitlines(), 1):
        if regex.search(line.encode("utf-8", "surrogatepass")) is not None:
            found.append((path, number, line))
            if len(found) >= limit:
                break
    return found


def _search(
    regex: Any, files: list[Path], roots: Sequence[Path], texts: dict[Path, str], cap: int
) -> list[Match]:
    found: list[Match] = []
    for path in files:
        try:
            with open_workspace_file(path, roots, max_bytes=GREP_MAX_FILE_BYTES) as handle:
                if looks_binary(handle):
                    continue
                text = handle.read(GREP_MAX_FILE_BYTES + 1).decode("utf-8", errors="replace")
        except (OSError, PathRefused):
            continue
        found.extend(_grep_text(path, text, regex, cap + 1 - len(found)))
        if len(found) > cap:
            break
    for path, text in texts.items():
        found.extend(_grep_text(path, text, regex, cap + 1))
    return found


async def python_search(
    pattern: str,
    ignore_case: bool,
    files: list[Path],
    roots: Sequence[Path],
    texts: dict[Path, str],
    cap: int,
) -> list[Match]:
    """The search by RE2 in a worker thread (open buffers, and without ripgrep the disk):
    `files` read from disk as the tool reads them, `texts` as given; matches in that order."""
    regex = _compile(pattern, ignore_case)
    return await asyncio.to_thread(_search, regex, files, roots, texts, cap)
