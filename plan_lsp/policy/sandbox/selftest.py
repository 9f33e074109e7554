"""The start-up proof: a mechanism is reported only after it held against a real probe
(docs/security.md, "The start-up self-test"): writes, a loopback connect, host Unix sockets
and FIFOs, the server's environment; and a workspace file must be readable.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from plan_lsp.policy.sandbox.layout import home_dir

PROBE_TIMEOUT_S = 10.0
SECRET_VARIABLE = "PLAN_LSP_SANDBOX_PROBE_SECRET"

# Runs inside the sandbox: $1 token, $2 workspace, $3 real home, $4 port, $5 server pid,
# $6 the server's interpreter, $7 IPC_PROBE, $8 a directory outside the workspace.
PLAN_PROBE = r"""
p="plan-lsp-probe-$1"
cat "$2/hello" 2>/dev/null
echo x > "$2/$p" 2>/dev/null
echo x > "/tmp/$p" 2>/dev/null
echo x > "$3/$p" 2>/dev/null
(exec 3<>"/dev/tcp/127.0.0.1/$4") 2>/dev/null && echo CONNECTED
"$6" -I -S -c "$7" "$2" "$8" 2>/dev/null
env
cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n'
sha256sum "/proc/$5/environ" 2>/dev/null
echo PROBE-END
"""

# The host's IPC endpoints the probe must not reach, in the workspace and outside it.
SOCKET_NAME, DATAGRAM_NAME, FIFO_NAME = "probe.sock", "probe-dgram.sock", "probe.fifo"
IPC_PROBE = f"""
import os, socket, sys
for d in sys.argv[1:]:
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(os.path.join(d, "{SOCKET_NAME}"))
        s.sendall(b"x")
        print("UNIX-CONNECTED")
    except OSError:
        pass
    try:
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        a.sendto(b"x", os.path.join(d, "{DATAGRAM_NAME}"))
        print("UNIX-SENT")
    except OSError:
        pass
    try:
        fd = os.open(os.path.join(d, "{FIFO_NAME}"), os.O_WRONLY | os.O_NONBLOCK)
        os.write(fd, b"x")
        print("FIFO-WRITTEN")
    except OSError:
        pass
print("IPC-PROBED")
"""

BUILD_PROBE = r"""
echo ok > "$1/written" && echo WROTE
echo x > "$1/.plan-lsp/probe" 2>/dev/null && echo STATE-WRITABLE
echo PROBE-END
"""

PROOF = (
    "a write, a connect, a Unix-socket connect and a FIFO write failed, the environment "
    "stayed hidden"
)
ArgvBuilder = Callable[[Path, Sequence[str], Path], list[str]]


@dataclass(frozen=True)
class ProbeResult:
    ok: bool
    why: str


@contextlib.contextmanager
def _host_endpoints(folders: Sequence[Path]) -> Iterator[Callable[[], list[str]]]:
    """Unix stream, datagram and FIFO endpoints in `folders`; the callable names those reached."""
    with contextlib.ExitStack() as stack:
        ends: list[tuple[Path, socket.socket, socket.socket, int]] = []
        for folder in folders:
            stack.callback(_remove_endpoints, folder)
            stream = stack.enter_context(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
            stream.bind(str(folder / SOCKET_NAME))
            stream.listen(8)
            stream.setblocking(False)
            datagram = stack.enter_context(socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM))
            datagram.bind(str(folder / DATAGRAM_NAME))
            datagram.setblocking(False)
            os.mkfifo(folder / FIFO_NAME, 0o666)
            fifo = os.open(folder / FIFO_NAME, os.O_RDONLY | os.O_NONBLOCK)
            stack.callback(os.close, fifo)
            ends.append((folder, stream, datagram, fifo))

        def reached() -> list[str]:
            found = []
            for folder, stream, datagram, fifo in ends:
                if _connected(stream):
                    found.append(f"a Unix-socket connect to {folder / SOCKET_NAME}")
                with contextlib.suppress(OSError):
                    datagram.recv(64)
                    found.append(f"a datagram to {folder / DATAGRAM_NAME}")
                with contextlib.suppress(OSError):
                    if os.read(fifo, 64):
                        found.append(f"a write to the FIFO {folder / FIFO_NAME}")
            return found

        yield reached


def _remove_endpoints(folder: Path) -> None:
    for name in (SOCKET_NAME, DATAGRAM_NAME, FIFO_NAME):
        with contextlib.suppress(OSError):
            if not stat.S_ISDIR((folder / name).lstat().st_mode):
                (folder / name).unlink()


def _connected(server: socket.socket) -> bool:
    try:
        conn, _ = server.accept()
    except (BlockingIOError, OSError):
        return False
    conn.close()
    return True


def _own_environ_digest() -> str | None:
    try:
        with open("/proc/self/environ", "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        argv,
        capture_output=True,
        env=env,
        timeout=PROBE_TIMEOUT_S,
        check=False,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )


def probe_plan(build: ArgvBuilder) -> ProbeResult:
    """Run the plan-profile probe through `build(workdir, argv, scratch)`."""
    token = secrets.token_hex(8)
    name = f"plan-lsp-probe-{token}"
    home = home_dir()
    with (
        tempfile.TemporaryDirectory(prefix="plan-lsp-probe-") as tmp,
        socket.create_server(("127.0.0.1", 0), backlog=8) as server,
    ):
        server.setblocking(False)
        workspace = Path(tmp) / "ws"
        scratch = Path(tmp) / "scratch"
        outside = Path(tmp) / "srv"
        for folder in (workspace, scratch, outside):
            folder.mkdir()
        (workspace / "hello").write_text(f"hello-{token}\n")
        port = server.getsockname()[1]
        env = {**os.environ, SECRET_VARIABLE: token}
        argv = ["bash", "-c", PLAN_PROBE, "probe", token, str(workspace),
                str(home or "/nonexistent"), str(port), str(os.getpid()),
                os.path.realpath(sys.executable), IPC_PROBE, str(outside)]  # fmt: skip
        try:
            with _host_endpoints([workspace, outside]) as endpoints:
                proc = _run(build(workspace, argv, scratch), env)
                reached = endpoints()
        except (OSError, subprocess.SubprocessError) as exc:
            return ProbeResult(False, f"the probe could not run: {exc}")
        leaked = [
            str(p)
            for p in (workspace / name, Path(tempfile.gettempdir()) / name, Path("/tmp") / name,
                      *( [home / name] if home else []))
            if p.exists()
        ]  # fmt: skip
        for path in leaked:
            with contextlib.suppress(OSError):
                Path(path).unlink()
        connected = _connected(server)
    out = proc.stdout.decode("utf-8", "replace")
    lines = out.splitlines()
    if "PROBE-END" not in lines:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        detail = err[-1] if err else f"exit code {proc.returncode}"
        return ProbeResult(False, f"the sandbox does not start: {detail[:300]}")
    if f"hello-{token}" not in lines:
        return ProbeResult(False, "the workspace is not readable inside the sandbox")
    if leaked:
        return ProbeResult(False, f"a write went through: {', '.join(leaked)}")
    if connected or "CONNECTED" in lines:
        return ProbeResult(False, "a TCP connection to a loopback listener went through")
    said = [w for w in ("UNIX-CONNECTED", "UNIX-SENT", "FIFO-WRITTEN") if w in lines]
    if reached or said:
        return ProbeResult(False, f"host IPC was reached: {', '.join(reached or said)}")
    if "IPC-PROBED" not in lines:
        return ProbeResult(False, "the Unix-socket and FIFO probe did not run in the sandbox")
    if token in out.replace(f"hello-{token}", ""):
        return ProbeResult(False, "the server's environment is visible inside the sandbox")
    digest = _own_environ_digest()
    if digest is not None and digest in out:
        return ProbeResult(False, "the server's /proc/<pid>/environ is readable")
    return ProbeResult(True, PROOF)


def probe_build(build: Callable[[Path, Sequence[str]], list[str]]) -> ProbeResult:
    """The build profile: the workspace writable, `.plan-lsp` not."""
    with tempfile.TemporaryDirectory(prefix="plan-lsp-probe-") as tmp:
        workspace = Path(tmp)
        try:
            argv = build(workspace, ["bash", "-c", BUILD_PROBE, "probe", str(workspace)])
            proc = _run(argv, dict(os.environ))
        except (OSError, subprocess.SubprocessError) as exc:
            return ProbeResult(False, f"the probe could not run: {exc}")
        state_written = (workspace / ".plan-lsp" / "probe").exists()
        wrote = (workspace / "written").exists()
        shutil.rmtree(workspace / ".plan-lsp", ignore_errors=True)
    lines = proc.stdout.decode("utf-8", "replace").splitlines()
    if "PROBE-END" not in lines:
        return ProbeResult(False, "the build sandbox does not start")
    if state_written or "STATE-WRITABLE" in lines:
        return ProbeResult(False, ".plan-lsp stayed writable")
    if not wrote:
        return ProbeResult(False, "the workspace was not writable")
    return ProbeResult(True, ".plan-lsp is read-only, the rest writable")


def timed(fn: Callable[[], ProbeResult]) -> tuple[ProbeResult, float]:
    started = time.perf_counter()
    result = fn()
    return result, (time.perf_counter() - started) * 1000
