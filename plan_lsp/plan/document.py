"""Where the plan document lives, and reading/writing it without ever leaving a torn file.

The plan's text is kept byte-exact: no newline translation on read or write, because the
editor buffer is the truth and what the user approved is hashed.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from pathlib import Path

MAX_PLAN_CHARS = 50_000
DEFAULT_PLAN_NAME = "PLAN.md"
PLANS_SUBDIR = ".plan-lsp/plans"

# Mode of a plan file that did not exist before (an existing file keeps its own mode).
NEW_FILE_MODE = 0o644

# Temporary files start with this prefix; plan path validation refuses hidden names, so the
# model can never name one, and file watchers can skip them.
TEMP_PREFIX = ".plan-lsp-tmp-"

# LSP line terminators (\n, \r\n, \r), as opposed to str.splitlines' longer list.
_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def plans_dir_for(workspace: Path) -> Path:
    """The default plans directory of a workspace folder."""
    return workspace / PLANS_SUBDIR


def split_lines(text: str) -> list[str]:
    """Lines with their terminators kept, split the way LSP counts lines.

    `"".join(split_lines(t)) == t` for every `t`.
    """
    return _LINE_RE.findall(text)


def strip_line_ending(line: str) -> tuple[str, str]:
    """Split one line from `split_lines` into (content, terminator)."""
    if line.endswith("\r\n"):
        return line[:-2], "\r\n"
    if line.endswith(("\n", "\r")):
        return line[:-1], line[-1]
    return line, ""


def atomic_write_text(path: Path, text: str) -> None:
    """Write `text` (UTF-8, exact newlines) so readers see the old file or the new one.

    A temporary file in the same directory is written, flushed and fsynced, then renamed
    over `path` with `os.replace`; the directory is fsynced where the platform allows so the
    rename itself survives a crash. Missing parent directories are created.
    """
    parent = path.parent
    parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = NEW_FILE_MODE
    fd, tmp_name = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=".tmp", dir=parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
    _fsync_dir(parent)


def _fsync_dir(directory: Path) -> None:
    # Directories cannot be opened for fsync on every platform (Windows); best effort.
    try:
        dir_fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def read_plan(path: Path) -> str | None:
    """The plan's text exactly as stored, or None if there is no regular file at `path`.

    Undecodable bytes become U+FFFD rather than failing: a plan is shown, not executed.
    """
    # A FIFO or device under the plan's name would block or stream forever; only files count.
    if not path.is_file():
        return None
    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as handle:
            return handle.read()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def fenced_code_mask(lines: list[str]) -> list[bool]:
    """For each line, True if it belongs to a fenced code block (fence lines included).

    Markdown fences: three or more backticks or tildes, closed by the same character at
    least as long; an unclosed fence runs to the end. Code is quoted text, not plan prose.
    """
    mask: list[bool] = []
    fence: str | None = None
    for line in lines:
        match = _FENCE_RE.match(line)
        if fence is None:
            if match:
                fence = match.group(1)
            mask.append(fence is not None)
        else:
            mask.append(True)
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                rest = line[match.end() :].strip()
                if not rest:
                    fence = None
    return mask
