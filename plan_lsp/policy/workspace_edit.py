"""Workspace-edit gate: the one function every change to a file goes through.

Plan mode lets only files inside the plans directory change. Build mode lets files inside
the workspace (or the plans directory) change. A document the client has open is changed
through the editor (`workspace/applyEdit`), so its buffer and undo history stay coherent;
anything else is written to disk atomically.

An edit carries the text it was computed against. If the file changed since (the user kept
typing), the edit is replayed onto the current text when the two changes touch different
lines, and refused otherwise: what the user typed is never overwritten by a stale copy.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from plan_lsp.policy.modes import WorkMode
from plan_lsp.policy.ports import EditorPort, FileEdit


@dataclass(frozen=True)
class EditResult:
    applied: bool
    path: Path
    # Why the edit was refused (empty when applied).
    reason: str = ""
    via: Literal["editor", "disk"] | None = None
    # The file's text after the edit.
    text: str | None = None
    # True when the edit was replayed onto text that changed after it was computed.
    rebased: bool = False
    created: bool = False


class StaleEdit(Exception):
    """The file changed since the edit was computed, in the lines the edit touches."""


def is_inside(path: Path, root: Path) -> bool:
    """`path` (already resolved) lies inside `root` after resolving the root's symlinks."""
    try:
        return path.is_relative_to(root.resolve())
    except (OSError, RuntimeError):
        return False


def _line_changes(base: list[str], other: list[str]) -> list[tuple[int, int, list[str]]]:
    matcher = difflib.SequenceMatcher(None, base, other, autojunk=False)
    return [
        (i1, i2, other[j1:j2]) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"
    ]


def rebase_edit(base: str | None, new: str, current: str | None) -> tuple[str, bool]:
    """The text to write: `new` if nothing changed since `base`, else `base → new` replayed
    onto `current`. Returns (text, rebased). Raises StaleEdit when both touched the same or
    adjacent lines."""
    base_text = base if base is not None else ""
    current_text = current if current is not None else ""
    if base_text == current_text:
        return new, False
    if new == current_text:
        return new, False
    if new == base_text:
        return current_text, True
    base_lines = base_text.splitlines(keepends=True)
    ours = _line_changes(base_lines, new.splitlines(keepends=True))
    theirs = _line_changes(base_lines, current_text.splitlines(keepends=True))
    for a1, a2, _ in ours:
        for b1, b2, _ in theirs:
            if a1 <= b2 and b1 <= a2:
                raise StaleEdit(
                    f"the file changed at line {b1 + 1} since the edit was computed, "
                    "where the edit also applies; read the file again and redo the edit"
                )
    merged: list[str] = []
    position = 0
    for i1, i2, replacement in sorted(ours + theirs, key=lambda c: (c[0], c[1])):
        merged.extend(base_lines[position:i1])
        merged.extend(replacement)
        position = i2
    merged.extend(base_lines[position:])
    return "".join(merged), True


def _read_disk(path: Path) -> str | None:
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` via a temporary file in the same directory + os.replace."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode: int | None = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = None
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def edit_refusal(
    path: Path, mode: WorkMode, plans_dir: Path, workspace_roots: list[Path]
) -> str | None:
    """Why a change to `path` (already resolved) is refused in `mode`, or None."""
    in_plans = is_inside(path, plans_dir)
    if mode is WorkMode.PLAN and not in_plans:
        return (
            f"plan mode: only the plan document may change (files inside {plans_dir}); "
            f"{path} is outside it"
        )
    if not in_plans and not any(is_inside(path, root) for root in workspace_roots):
        return f"{path} is outside the workspace; only files inside it may change"
    return None


async def apply_file_edit(
    edit: FileEdit,
    mode: WorkMode,
    plans_dir: Path,
    workspace_roots: list[Path],
    editor: EditorPort,
) -> EditResult:
    """Apply one whole-file change if the mode and location allow it."""
    raw = Path(edit.path)
    if "\x00" in str(raw):
        return EditResult(False, raw, "the path contains a NUL byte")
    if not raw.is_absolute():
        base = workspace_roots[0] if workspace_roots else plans_dir
        raw = base / raw
    try:
        resolved = raw.resolve()
    except (OSError, RuntimeError) as exc:
        return EditResult(False, raw, f"cannot resolve {raw}: {exc}")
    refusal = edit_refusal(resolved, mode, plans_dir, workspace_roots)
    if refusal is not None:
        return EditResult(False, resolved, refusal)
    if resolved.is_dir():
        return EditResult(False, resolved, f"{resolved} is a directory")

    # The buffer is the truth for open documents; it may be keyed by the path as given.
    key = resolved
    buffer = editor.open_document_text(resolved)
    if buffer is None and raw != resolved:
        buffer = editor.open_document_text(raw)
        key = raw
    if buffer is not None:
        try:
            text, rebased = rebase_edit(edit.old_text, edit.new_text, buffer)
        except StaleEdit as exc:
            return EditResult(False, resolved, f"{resolved}: {exc}", via="editor")
        if text == buffer:
            return EditResult(True, resolved, via="editor", text=text, rebased=rebased)
        ok = await editor.apply_to_open_document(FileEdit(path=key, new_text=text, old_text=buffer))
        if not ok:
            return EditResult(
                False, resolved, f"the editor refused the change to {resolved}", via="editor"
            )
        return EditResult(True, resolved, via="editor", text=text, rebased=rebased)

    try:
        current = _read_disk(resolved)
    except UnicodeDecodeError:
        return EditResult(False, resolved, f"{resolved} is not a UTF-8 text file")
    except OSError as exc:
        return EditResult(False, resolved, f"cannot read {resolved}: {exc.strerror or exc}")
    try:
        text, rebased = rebase_edit(edit.old_text, edit.new_text, current)
    except StaleEdit as exc:
        return EditResult(False, resolved, f"{resolved}: {exc}", via="disk")
    try:
        write_atomic(resolved, text)
    except OSError as exc:
        return EditResult(False, resolved, f"cannot write {resolved}: {exc.strerror or exc}")
    return EditResult(
        True, resolved, via="disk", text=text, rebased=rebased, created=current is None
    )
