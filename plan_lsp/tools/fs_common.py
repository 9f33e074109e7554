"""What the file tools share: limits, buffer-aware reads, the workspace walk."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from plan_lsp.tools.base import ToolContext, ToolResult
from plan_lsp.tools.paths import PathRefused

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


def _walk_files(base: Path) -> Iterator[Path]:
    if base.is_file():
        yield base
        return
    for directory, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d not in PRUNED_DIRS)
        for name in sorted(filenames):
            yield Path(directory) / name
