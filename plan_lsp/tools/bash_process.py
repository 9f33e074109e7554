"""Running one process for the `bash` tool: its own session, output capped at both ends,
a timeout and cancellation that kill the whole process tree."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from plan_lsp.policy.sandbox.subreaper import descendants

_READ_CHUNK = 65536
# After the process is gone, how long a grandchild holding the pipe may keep readers waiting.
_DRAIN_GRACE_S = 2.0
# Looks through /proc for descendants that appeared since the last kill.
_MAX_SWEEPS = 100


def cap_text(text: str, cap: int) -> tuple[str, bool]:
    """`text` cut to about `cap` characters (start and end kept), and whether it was cut."""
    if len(text) <= cap:
        return text, False
    half = cap // 2
    return text[:half] + _cut_note(f"{len(text) - 2 * half} characters") + text[-half:], True


def _cut_note(what: str) -> str:
    return f"\n[... {what} cut from the middle of this output ...]\n"


class Capture:
    """Keeps the first and last `cap // 2` characters of a stream and counts the rest."""

    def __init__(self, cap: int) -> None:
        self.half = cap // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self.half * 4 - len(self.head)  # bytes; trimmed to characters at the end
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > self.half * 8:
                del self.tail[: len(self.tail) - self.half * 4]

    def text(self) -> tuple[str, bool]:
        """The kept text and whether something was cut (with a note saying how much)."""
        if len(self.head) + len(self.tail) == self.total:  # nothing dropped: cut by characters
            return cap_text((self.head + self.tail).decode("utf-8", "replace"), self.half * 2)
        head = self.head.decode("utf-8", "replace")[: self.half]
        tail = self.tail.decode("utf-8", "replace")[-self.half :]
        dropped = self.total - len(head.encode()) - len(tail.encode())
        return head + _cut_note(f"about {dropped} bytes") + tail, True


async def _pump(stream: asyncio.StreamReader | None, sink: Capture) -> None:
    if stream is None:
        return
    while True:
        chunk = await stream.read(_READ_CHUNK)
        if not chunk:
            return
        sink.feed(chunk)


def _kill_tree(proc: asyncio.subprocess.Process) -> None:
    """Kill everything below the process, then the process and its group. Descendants are
    found in /proc (they may have left the group), again and again while new ones appear:
    under the subreaper launcher (the process itself) the orphans of what was killed are
    adopted by it and found by the next look."""
    pid = proc.pid
    signalled: set[int] = set()
    for _ in range(_MAX_SWEEPS):
        fresh = [p for p in descendants(pid) if p not in signalled]
        if not fresh:
            break
        for child in fresh:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(child, signal.SIGKILL)
        signalled.update(fresh)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()


async def run_process(
    argv: list[str],
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    cancel: asyncio.Event | None,
    *,
    cap: int,
) -> tuple[int | None, str, Capture, Capture]:
    """Run `argv` to its end, its timeout or `cancel`: (exit code, "exited" | "timeout" |
    "cancelled", stdout, stderr). OSError when it cannot start."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=str(cwd),
        env=dict(env),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    out, err = Capture(cap), Capture(cap)
    readers = [
        asyncio.ensure_future(_pump(proc.stdout, out)),
        asyncio.ensure_future(_pump(proc.stderr, err)),
    ]
    stop = "exited"
    waiter = asyncio.ensure_future(proc.wait())
    cancelled = asyncio.ensure_future(cancel.wait()) if cancel is not None else None
    try:
        pending: set[asyncio.Future[Any]] = {waiter}
        if cancelled is not None:
            pending.add(cancelled)
        done, _ = await asyncio.wait(
            pending, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED
        )
        if waiter not in done:
            stop = "cancelled" if cancelled is not None and cancelled in done else "timeout"
        # Gone or not, anything the command left behind in its group goes too.
        _kill_tree(proc)
        await proc.wait()
        await asyncio.wait(readers, timeout=_DRAIN_GRACE_S)
    except asyncio.CancelledError:
        _kill_tree(proc)
        raise
    finally:
        for task in (*readers, waiter, *([cancelled] if cancelled is not None else [])):
            task.cancel()
    return proc.returncode, stop, out, err
