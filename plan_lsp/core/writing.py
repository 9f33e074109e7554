"""One run changes a folder at a time: a build-mode run or a Do run holds the folder's writer
slot while it runs, across the sessions of this process (several ACP sessions on one folder)
and across processes (two editor windows on one folder: a lock file beside the folder's
state). A second one is refused, naming the session (and process) writing.

Two windows on one folder are two sessions: a window holds its session while it lives (a lock
file beside the folder's state), and a second window, which would restore that same session,
starts one of its own instead (`other_window`); the plan files are the folder's, shared."""

from __future__ import annotations

import contextlib
import fcntl
import os
import uuid
from collections.abc import Callable
from pathlib import Path

from plan_lsp.core.frontend import Refused
from plan_lsp.core.runs import RunHandle
from plan_lsp.core.workspace import WorkspaceCore
from plan_lsp.protocol.state import WorkMode
from plan_lsp.session import StateStore

# The folders a run of this process is writing to, and who holds each.
_HELD: dict[Path, str] = {}
# The sessions this process holds open (their lock files' descriptors, kept while it lives).
_OPEN_SESSIONS: dict[Path, int] = {}


def _refusal(holder: str) -> Refused:
    return Refused(
        f"{holder} is changing this folder; one run changes a folder at a time. "
        "Wait for it to end (or cancel it there), then try again"
    )


def other_window(store: StateStore, root: Path) -> str | None:
    """Whether another window (a plan-lsp process) has the folder's latest session open — the
    one a window naming none would restore: who, then; None when it is free."""
    found = store.first_session(str(root)) if store.persistent else None
    if found is None:
        return None
    path = store.path.with_name(f"session-{found[0]}.lock")
    if path in _OPEN_SESSIONS:
        return None
    holder = _held_by(path)
    return None if holder is None else f"session {found[0]} ({holder})"


def _held_by(path: Path) -> str | None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return os.read(fd, 300).decode(errors="replace").strip() or "another plan-lsp process"
    finally:
        os.close(fd)
    return None


def hold_session(store: StateStore, session_id: str) -> None:
    """Hold session `session_id` open while this process lives (`other_window`)."""
    path = store.path.with_name(f"session-{session_id}.lock")
    if not store.persistent or path in _OPEN_SESSIONS:
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:  # another window has it open as well (it named it)
        os.close(fd)
        return
    os.ftruncate(fd, 0)
    os.write(fd, f"plan-lsp process {os.getpid()}".encode())
    _OPEN_SESSIONS[path] = fd


def release_session(store: StateStore, session_id: str) -> None:
    fd = _OPEN_SESSIONS.pop(store.path.with_name(f"session-{session_id}.lock"), None)
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)  # closing the file releases its lock


def new_session_id() -> str:
    return uuid.uuid4().hex[:12]


_ROUND = ("drafting", "submitted", "rejected")


def live_rounds(store: StateStore, me: str) -> list[str]:
    """The plan files other sessions open now (this process's or another window's) are
    planning in: a round of this session never writes over them (`Session.plan_target`)."""
    if not store.persistent:
        return []
    found = []
    for other in store.session_ids():
        path = store.path.with_name(f"session-{other}.lock")
        if other == me or not (path in _OPEN_SESSIONS or (path.exists() and _held_by(path))):
            continue
        data = store.session(other) or {}
        plan = data.get("planPath")
        if data.get("planStatus") in _ROUND and isinstance(plan, str):
            found.append(plan)
    return found


def check(core: WorkspaceCore) -> None:
    """Refuse (naming the holder) when another session is writing here: of this process, or
    of another window (before an approval is recorded that could not be carried out)."""
    holder = _HELD.get(core.root)
    if holder is None and core.store.persistent:
        holder = _held_by(_lock_path(core))
    if holder is not None:
        raise _refusal(holder)


def _lock_path(core: WorkspaceCore) -> Path:
    return core.store.path.with_name("writing.lock")


def _claim(core: WorkspaceCore) -> Callable[[], None]:
    check(core)
    me = f"session {core.session.id}"
    fd: int | None = None
    if core.store.persistent:
        fd = os.open(_lock_path(core), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = os.read(fd, 300).decode(errors="replace").strip()
            os.close(fd)
            raise _refusal(other or "another plan-lsp process") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{me} (plan-lsp process {os.getpid()})".encode())
    _HELD[core.root] = me

    def release() -> None:
        if _HELD.get(core.root) == me:
            del _HELD[core.root]
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)  # closing the file releases its lock

    return release


def start(core: WorkspaceCore, begin: Callable[[], RunHandle], *, do_run: bool) -> RunHandle:
    """Start a run with `begin`, holding the folder's writer slot until it ends when it may
    change the folder (a Do run, or any run in build mode)."""
    if not do_run and core.session.mode is not WorkMode.BUILD:
        return begin()
    release = _claim(core)
    try:
        handle = begin()
    except BaseException:
        release()
        raise
    assert handle.task is not None
    handle.task.add_done_callback(lambda _task: release())
    return handle
