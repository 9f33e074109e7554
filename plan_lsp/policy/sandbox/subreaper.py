"""Runs one command and takes everything it started with it: `python -I -S subreaper.py --
ARGV...`, for commands outside a pid namespace. As a child subreaper it inherits every orphan
(`setsid -f`, a daemon) and, when the command ends or it is told to stop, kills everything
below it, then exits with the command's status (docs/security.md, section 9).
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import sys

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
# Rounds of "find what is left, kill it" before giving up on a process that keeps forking.
MAX_SWEEPS = 1000
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
# Python ignores these at start-up, and an ignored signal stays ignored across exec.
RESTORED_SIGNALS = (signal.SIGPIPE, signal.SIGXFSZ)
NOTE = "plan-lsp: "


class Stop(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _stop(signum: int, _frame: object) -> None:
    raise Stop(signum)


def _has_threads(pid: str) -> bool:
    """A process shown as a zombie whose other threads still run: its main thread ended
    with the raw `exit` syscall (`/proc` shows the leader's state) and it lives on."""
    try:
        return len(os.listdir(f"/proc/{pid}/task")) > 1
    except OSError:
        return False


def descendants(root: int) -> list[int]:
    """Every living process below `root`, from /proc (a zombie whose threads run lives)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # The command name may contain spaces and parentheses: parse after the last ')'.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1 and fields[0] != b"X" and (fields[0] != b"Z" or _has_threads(entry)):
            children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def _reap() -> bool:
    """Collect every exited child; False when there are no children at all."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True


def sweep() -> None:
    """Kill everything below this process until nothing is left (the orphans of what is
    killed become its children); a second stop signal does not interrupt it."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    for _ in range(MAX_SWEEPS):
        left = descendants(os.getpid())
        if not left:
            break
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.waitpid(-1, 0)  # one of them is gone: look again
        except ChildProcessError:
            pass
    _reap()


def _subreaper() -> str | None:
    """Make this process the subreaper of what it starts; why not, or None."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            return os.strerror(ctypes.get_errno())
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError) as exc:
        return str(exc)
    return None


def _exit_like(status: int) -> int:
    """Leave as the command did: its exit code, or the signal that ended it."""
    code = os.waitstatus_to_exitcode(status)
    if code >= 0:
        return code
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
    return 128 - code


def main(args: list[str]) -> int:
    if len(args) < 2 or args[0] != "--":
        print(f"{NOTE}usage: subreaper.py -- COMMAND...", file=sys.stderr)
        return 126
    argv = args[1:]
    parent = os.getppid()
    for signum in STOP_SIGNALS:
        signal.signal(signum, _stop)
    why = _subreaper()
    if why is not None:
        print(
            f"{NOTE}processes this command leaves running cannot be stopped with it here "
            f"(PR_SET_CHILD_SUBREAPER: {why})",
            file=sys.stderr,
        )
    if os.getppid() != parent:
        return 126  # the server is already gone
    try:
        pid = os.fork()
        if pid == 0:
            try:
                for signum in (*STOP_SIGNALS, *RESTORED_SIGNALS):
                    signal.signal(signum, signal.SIG_DFL)
                os.execvp(argv[0], argv)
            except OSError as exc:
                print(f"{NOTE}{argv[0]}: {exc.strerror}", file=sys.stderr)
            os._exit(127)
        while True:
            done, status = os.waitpid(-1, 0)
            if done == pid:
                break
    except Stop as stop:
        sweep()
        return 128 + stop.signum
    sweep()
    return _exit_like(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
