"""Workspace-edit gate: the one function every change a tool makes to a file goes through.

An open document changes through the editor (its buffer and undo stay coherent), anything
else through `safe_fs`. An edit computed against text the user has since changed is replayed
when the changes touch other lines, else refused: what the user typed is never overwritten.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from plan_lsp.policy.plan_paths import validate_plan_path
from plan_lsp.policy.ports import EditorPort, FileEdit
from plan_lsp.policy.safe_fs import read_text, write_text
from plan_lsp.policy.server_dir import server_dir_refusal
from plan_lsp.protocol.state import WorkMode


@dataclass(frozen=True)
class EditResult:
    applied: bool
    path: Path
    reason: str = ""  # why the edit was refused
    via: Literal["editor", "disk"] | None = None
    text: str | None = None  # the file's text after the edit
    rebased: bool = False  # replayed onto text that changed after it was computed
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
    """(the text to write, rebased): `new` if nothing changed since `base`, else `base → new`
    replayed onto `current`; StaleEdit when both touched the same or adjacent lines."""
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


def anchor_of(path: Path, roots: Sequence[Path]) -> Path | None:
    """The (resolved) workspace root `path` lies in; the deepest when roots nest."""
    inside = [root.resolve() for root in roots if is_inside(path, root)]
    return max(inside, key=lambda root: len(root.parts)) if inside else None


def edit_refusal(
    path: Path, mode: WorkMode, plans_dir: Path, workspace_roots: list[Path]
) -> str | None:
    """Why a workspace tool may not change `path` (already resolved) in `mode`, or None."""
    refusal = server_dir_refusal(path, workspace_roots)
    if refusal is not None:
        return refusal
    if mode is WorkMode.PLAN:
        return (
            f"plan mode: only the plan document may change (files inside {plans_dir}, "
            f"with plan_write); {path} is outside it"
        )
    if anchor_of(path, workspace_roots) is None:
        return f"{path} is outside the workspace; only files inside it may change"
    return None


def _plan_target(
    raw: Path, plans_dir: Path, workspace_roots: list[Path]
) -> tuple[Path, Path] | str:
    """(the plan file to write, its workspace root) or why a plan tool may not write `raw`."""
    for base in (plans_dir, plans_dir.resolve()):
        try:
            name = raw.relative_to(base).as_posix()
            break
        except ValueError:
            continue
    else:
        return f"{raw} is not inside the plans directory {plans_dir}"
    workspace = next(
        (
            root
            for root in workspace_roots
            if plans_dir.is_relative_to(root) or plans_dir.is_relative_to(root.resolve())
        ),
        None,
    )
    checked = validate_plan_path(plans_dir, name, must_exist=False, workspace=workspace)
    if not checked.ok or checked.resolved is None:
        return checked.error or "invalid plan path"
    resolved = Path(checked.resolved)
    anchor = anchor_of(resolved, workspace_roots) if workspace is not None else None
    if anchor is None:
        return f"the plans directory {plans_dir} is not inside a workspace folder"
    return resolved, anchor


async def apply_file_edit(
    edit: FileEdit,
    mode: WorkMode,
    plans_dir: Path,
    workspace_roots: list[Path],
    editor: EditorPort,
    *,
    plan_file: bool = False,
) -> EditResult:
    """Apply one whole-file change if the mode and location allow it: workspace tools in
    build mode, inside the workspace, outside `.plan-lsp/`; plan tools (`plan_file`) a plan
    file only."""
    raw = Path(edit.path)
    if "\x00" in str(raw):
        return EditResult(False, raw, "the path contains a NUL byte")
    if not raw.is_absolute():
        base = workspace_roots[0] if workspace_roots else plans_dir
        raw = base / raw
    if plan_file:
        target = _plan_target(raw, plans_dir, workspace_roots)
        if isinstance(target, str):
            return EditResult(False, raw, target)
        resolved, anchor = target
    else:
        try:
            resolved = raw.resolve()
        except (OSError, RuntimeError) as exc:
            return EditResult(False, raw, f"cannot resolve {raw}: {exc}")
        refusal = edit_refusal(resolved, mode, plans_dir, workspace_roots)
        if refusal is not None:
            return EditResult(False, resolved, refusal)
        found = anchor_of(resolved, workspace_roots)
        assert found is not None  # edit_refusal refuses paths outside every root
        anchor = found
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
        current = read_text(anchor, resolved)
    except UnicodeDecodeError:
        return EditResult(False, resolved, f"{resolved} is not a UTF-8 text file")
    except OSError as exc:
        return EditResult(False, resolved, f"cannot read {resolved}: {exc.strerror or exc}")
    try:
        text, rebased = rebase_edit(edit.old_text, edit.new_text, current)
    except StaleEdit as exc:
        return EditResult(False, resolved, f"{resolved}: {exc}", via="disk")
    if text == current:
        return EditResult(True, resolved, via="disk", text=text, rebased=rebased)
    try:
        written = write_text(anchor, resolved, text)
    except OSError as exc:
        return EditResult(False, resolved, f"cannot write {resolved}: {exc.strerror or exc}")
    return EditResult(
        True, resolved, via="disk", text=text, rebased=rebased, created=written.created
    )
