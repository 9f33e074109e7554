"""One run changes a folder at a time: a build-mode run or a Do run holds the folder's writer
slot while it runs, across the sessions of this process (several ACP sessions on one folder)
and across processes (two editor windows on one folder: a lock file beside the folder's
state). A second one is refused, naming the session (and process) writing."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable
from pathlib import Path

from plan_lsp.core.frontend import Refused
from plan_lsp.core.runs import RunHandle
from plan_lsp.core.workspace import WorkspaceCore
from plan_lsp.protocol.state import WorkMode

# The folders a run of this process is writing to, and who holds each.
_HELD: dict[Path, str] = {}


def _refusal(holder: str) -> Refused:
    return Refused(
        f"refused: {holder} is changing this folder; one run changes a folder at a time. "
        "Wait for it to end (or cancel it there), then try again"
    )


def check(core: WorkspaceCore) -> None:
    """Refuse (naming the holder) when another session of this process is writing here."""
    holder = _HELD.get(core.root)
    if holder is not None:
        raise _refusal(holder)


def _claim(core: WorkspaceCore) -> Callable[[], None]:
    check(core)
    me = f"session {core.session.id}"
    fd: int | None = None
    if core.store.persistent:
        fd = os.open(core.store.path.with_name("writing.lock"), os.O_RDWR | os.O_CREAT, 0o600)
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
