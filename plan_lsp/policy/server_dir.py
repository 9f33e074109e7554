"""The server's own folder, `<workspace>/.plan-lsp/`: plans, revisions, a shared configuration.
The plans directory is a real folder below it (not `revisions`), reached without a link;
tools never change anything inside it (`server_dir_refusal`); writes go through `safe_fs`.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from plan_lsp.policy.safe_fs import (
    WriteRefused,
    ensure_folder,
    link_problem,
    read_text,
    write_text,
)

SERVER_DIR = ".plan-lsp"
REVISIONS_DIR = "revisions"
# Mode asked of open(2) for revision files (the umask applies): read-only copies.
REVISION_MODE = 0o444
# How often a watch for a plans directory not made yet looks again without a change.
_RECHECK_MS = 5000

# `.plan-lsp/.gitignore`, written with the folder; it names itself.
GITIGNORE = """\
# Written by plan-lsp: transcripts, plan revisions, an earlier version's database and this
# file stay out of version control; plans (plans/) and a shared config.toml may be committed.
.gitignore
state.db*
revisions/
*.jsonl
.plan-lsp-tmp-*
"""

ACCESS_DENIED_PLANS_DIR_OUTSIDE = (
    "Access denied: the plans directory {plans_dir} is not a folder inside {server_dir} "
    f"(nor {SERVER_DIR}/{REVISIONS_DIR})"
)
ACCESS_DENIED_PLANS_DIR_LINK = (
    "Access denied: the plans directory cannot be reached without following a link: {problem}"
)


@dataclass(frozen=True)
class PlansDir:
    """A plans directory known to lie below `<anchor>/.plan-lsp/`."""

    anchor: Path  # the workspace folder (resolved), where every walk starts
    parts: tuple[str, ...]  # below the anchor, the first being `.plan-lsp`

    @property
    def path(self) -> Path:
        return self.anchor.joinpath(*self.parts)


def _infer_workspace(plans_dir: Path) -> Path | None:
    """The folder holding the nearest `.plan-lsp` above `plans_dir`, if any."""
    parts = plans_dir.parts
    for index in range(len(parts) - 1, -1, -1):
        if parts[index] == SERVER_DIR:
            return Path(*parts[:index])
    return None


def _parts_below(path: Path, workspace: Path) -> tuple[str, ...] | None:
    for base in (workspace, workspace.resolve()):
        try:
            return path.relative_to(base).parts
        except ValueError:
            continue
    return None


def locate_plans_dir(plans_dir: Path, workspace: Path | None = None) -> PlansDir | str:
    """Where `plans_dir` lies below `workspace` (else inferred), or the fixed message why not."""
    plans_dir = plans_dir.absolute()
    workspace = workspace.absolute() if workspace is not None else _infer_workspace(plans_dir)
    parts = _parts_below(plans_dir, workspace) if workspace is not None else None
    if (
        workspace is None
        or parts is None
        or len(parts) < 2
        or parts[0] != SERVER_DIR
        or parts[1] == REVISIONS_DIR
        or any(part in ("", ".", "..") for part in parts)
    ):
        shown_ws = workspace if workspace is not None else "<workspace>"
        return ACCESS_DENIED_PLANS_DIR_OUTSIDE.format(
            plans_dir=plans_dir, server_dir=f"{shown_ws}/{SERVER_DIR}/"
        )
    try:
        anchor = workspace.resolve()
    except (OSError, RuntimeError) as exc:
        return ACCESS_DENIED_PLANS_DIR_LINK.format(problem=f"{workspace}: {exc}")
    located = PlansDir(anchor, parts)
    problem = link_problem(anchor, located.path, folder=True)
    if problem is not None:
        return ACCESS_DENIED_PLANS_DIR_LINK.format(problem=problem)
    return located


def ensure_server_dir(anchor: Path) -> Path:
    """Create `<anchor>/.plan-lsp/` without following links, and its `.gitignore` the first
    time (never overwritten, never through a link); the folder's path."""
    folder = anchor / SERVER_DIR
    ensure_folder(anchor, folder)
    try:
        fd = os.open(
            folder / ".gitignore", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644
        )
    except OSError:
        return folder  # exists already (the user's or ours), or the folder is not writable
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(GITIGNORE)
    return folder


def ensure_plans_dir(plans_dir: Path, workspace: Path | None = None) -> Path:
    """Create the plans directory (and `.plan-lsp`) without following links; its path."""
    located = locate_plans_dir(plans_dir, workspace)
    if isinstance(located, str):
        raise WriteRefused(located)
    ensure_server_dir(located.anchor)
    ensure_folder(located.anchor, located.path)
    return located.path


async def plans_dir_once_made(
    plans_dir: Path, workspace: Path | None, stop: asyncio.Event
) -> Path | None:
    """The plans directory once it exists, checked as `ensure_plans_dir` does, without making
    it: until then the nearest existing folder on the way is watched (and looked at again
    every `_RECHECK_MS`). None when `stop` is set first; WriteRefused as `ensure_plans_dir`."""
    from watchfiles import awatch

    located = locate_plans_dir(plans_dir, workspace)
    if isinstance(located, str):
        raise WriteRefused(located)
    while not stop.is_set():
        existing = located.anchor
        for part in located.parts:
            if not os.path.lexists(existing / part):
                break
            existing = existing / part
        else:
            return ensure_plans_dir(plans_dir, workspace)
        async for _changes in awatch(
            existing,
            recursive=False,
            stop_event=stop,
            yield_on_timeout=True,
            rust_timeout=_RECHECK_MS,
        ):
            break  # something changed there (or a while passed): look again
    return None


def server_dir_refusal(path: Path, roots: Sequence[Path], shown: str | None = None) -> str | None:
    """Why no tool may change `path` (resolved): it lies inside a workspace's `.plan-lsp/`,
    compared case-insensitively (such a filesystem opens `.PLAN-LSP` as it); or None."""
    for root in roots:
        parts = _parts_below(path, root)
        if parts and parts[0].casefold() == SERVER_DIR:
            name = shown or "/".join(parts)
            return (
                f"{name} is inside {SERVER_DIR}/, the server's own folder (its state, "
                "configuration, plans and revisions); no tool may change it. Plans change "
                "only through plan_write in plan mode, or in the editor"
            )
    return None


def revision_path(workspace: Path, rev: int) -> Path:
    return workspace.resolve() / SERVER_DIR / REVISIONS_DIR / f"PLAN.rev{rev}.md"


def write_revision(workspace: Path, rev: int, text: str) -> Path:
    """Keep revision `rev` as a read-only file under `.plan-lsp/revisions/`; its path. An
    unchanged copy is left alone; a link or non-file on the way is refused."""
    anchor = workspace.resolve()
    path = revision_path(workspace, rev)
    try:
        current = read_text(anchor, path)
    except UnicodeDecodeError:
        current = None
    if current != text:
        ensure_server_dir(anchor)
        write_text(anchor, path, text, mode=REVISION_MODE)
    return path
