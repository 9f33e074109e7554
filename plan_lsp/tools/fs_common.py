"""What the file tools share: limits, buffer-aware reads, the workspace walk, and the one
way they open a file on disk (`open_workspace_file`)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import BinaryIO

from plan_lsp.policy.safe_fs import open_folder, open_regular
from plan_lsp.policy.workspace_edit import anchor_of
from plan_lsp.tools.base import ToolContext, ToolResult
from plan_lsp.tools.paths import PathRefused

READ_CAP_BYTES = 256 * 1024
BINARY_SNIFF_BYTES = 8192
LIST_CAP = 1000
GLOB_CAP = 500
GREP_CAP = 200
GREP_LINE_CHARS = 400
GREP_MAX_FILE_BYTES = 10 * 1024 * 1024
# read_file streams the lines it shows; a larger file is refused rather than scanned for minutes.
READ_MAX_FILE_BYTES = 256 * 1024 * 1024
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


def looks_binary(handle: BinaryIO) -> bool:
    """Whether the open file's first bytes hold a NUL; the handle is rewound."""
    binary = b"\x00" in handle.read(BINARY_SNIFF_BYTES)
    handle.seek(0)
    return binary


def _anchor(path: Path, roots: Sequence[Path]) -> Path:
    anchor = anchor_of(path, roots)
    if anchor is None:
        raise PathRefused(f"{path} is outside the workspace")
    return anchor


def open_workspace_file(
    path: Path, roots: Sequence[Path], *, max_bytes: int | None
) -> AbstractContextManager[BinaryIO]:
    """The regular file `path` (resolved, inside a root), open for reading: walked from its
    root by `safe_fs.open_regular`, so a link swapped in after `resolve_path` is refused."""
    return open_regular(_anchor(path, roots), path, max_bytes=max_bytes)


def open_workspace_folder(path: Path, roots: Sequence[Path]) -> AbstractContextManager[int]:
    """A descriptor of the folder `path` (resolved, inside a workspace root), reached from its
    root without following a link."""
    return open_folder(_anchor(path, roots), path)


def _refused(exc: PathRefused) -> ToolResult:
    return ToolResult.error("path_refused", str(exc))


def _walk_files(base: Path) -> Iterator[Path]:
    if base.is_file():
        yield base
        return
    for directory, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d not in PRUNED_DIRS)
        for name in sorted(filenames):
            yield Path(directory) / name
