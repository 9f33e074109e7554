"""No plan-mode command reaches a host process through a path: a Unix socket (stream or
datagram) or a FIFO, in the workspace or in another read-only tree, under bubblewrap and
under Landlock, with the network off and on. Their own scratch space keeps working (FIFOs,
socket pairs, multiprocessing), and the start-up self-test fails when either guard is
missing.

Every case also runs without a sandbox first, as a control: the endpoints must see it.
Behaviour tests skip without the mechanism, and FAIL when CI=true."""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import socket
import stat
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from plan_lsp.policy.sandbox import Mechanism, sandbox_argv
from plan_lsp.policy.sandbox import bwrap as bwrap_mod
from plan_lsp.policy.sandbox.bwrap import PRIVATE_TMP, SANDBOX_LAUNCHER, plan_argv
from plan_lsp.policy.sandbox.landlock import landlock_abi
from plan_lsp.policy.sandbox.selftest import PROOF, probe_plan
from tests.needs import need
from tests.sandbox_support import require, run_in

MECHANISMS: tuple[Mechanism, ...] = ("bubblewrap", "landlock")

# Each writes the marker to the endpoint it names: $1 a folder holding `svc.sock` (stream
# listener), `dgram.sock` (datagram socket) and `fifo` (a reader waiting).
ATTACKS = {
    "python-connect": "python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); "
    's.connect(sys.argv[1] + "/svc.sock"); s.sendall(b"MARK")\' "$1"',
    "python-dgram": "python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX, "
    'socket.SOCK_DGRAM); s.sendto(b"MARK", sys.argv[1] + "/dgram.sock")\' "$1"',
    "python-pair-dgram": "python3 -c 'import socket,sys; a,b=socket.socketpair(socket.AF_UNIX,"
    ' socket.SOCK_DGRAM); a.sendto(b"MARK", sys.argv[1] + "/dgram.sock")\' "$1"',
    "python-pair-stream": "python3 -c 'import socket,sys; a,b=socket.socketpair(); "
    'a.connect(sys.argv[1] + "/svc.sock"); a.sendall(b"MARK")\' "$1"',
    "curl-unix-socket": 'curl -s -m 2 --unix-socket "$1/svc.sock" http://x/MARK',
    "nc-unix": 'echo MARK | nc -N -w 2 -U "$1/svc.sock"',
    "nc-unix-dgram": 'echo MARK | nc -u -w 1 -U "$1/dgram.sock"',
    "socat-unix": 'echo MARK | socat - UNIX-CONNECT:"$1/svc.sock"',
    "socat-fifo": 'echo MARK | socat -u - OPEN:"$1/fifo"',
    "echo-fifo": 'echo MARK > "$1/fifo"',
    # Around a path check: the FIFO opened for reading, reopened for writing through
    # /proc/self/fd; a link to it made in scratch space.
    "proc-fd-reopen": 'python3 -c \'import os,sys; r=os.open(sys.argv[1] + "/fifo", '
    'os.O_RDONLY | os.O_NONBLOCK); w=os.open(f"/proc/self/fd/{r}", os.O_WRONLY); '
    'os.write(w, b"MARK")\' "$1"',
    "symlink-fifo": 'l="${TMPDIR:-/tmp}/l$$"; ln -s "$1/fifo" "$l" && echo MARK > "$l"; rm -f "$l"',
    "tee-fifo": 'echo MARK | tee "$1/fifo"',
    "dd-fifo": 'echo MARK | dd of="$1/fifo" status=none',
    "exec-rw-fifo": 'exec 3<>"$1/fifo" && echo MARK >&3',
    "append-fifo": 'echo MARK >> "$1/fifo"',
}


PROGRAMS = ("curl", "nc", "socat")  # the attacks of these need them installed


@dataclass
class Endpoints:
    """A host service on a Unix stream socket and a datagram socket, and a FIFO reader, in
    `folder`; `received` is everything they got."""

    folder: Path
    received: list[bytes] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.lock = threading.Lock()
        self.stream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.stream.bind(str(self.folder / "svc.sock"))
        self.stream.listen(16)
        self.dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.dgram.bind(str(self.folder / "dgram.sock"))
        self.dgram.setblocking(False)
        os.mkfifo(self.folder / "fifo", 0o666)
        # Held open without blocking: a writer's open never waits, its bytes stay readable.
        self.fifo = os.open(self.folder / "fifo", os.O_RDONLY | os.O_NONBLOCK)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        """Accepts, records what the client sends (until it stops, at most 2 s), closes."""
        while True:
            try:
                conn, _ = self.stream.accept()
            except OSError:
                return  # closed
            conn.settimeout(2)
            data = b""
            with contextlib.suppress(OSError):
                while chunk := conn.recv(4096):
                    data += chunk
                    if b"MARK" in data:
                        break
            with self.lock:  # recorded before the client can see the close and end
                self.received.append(b"connect:" + data)
            conn.close()

    def collect(self) -> list[bytes]:
        """What reached the endpoints since the last call (the command has ended: its
        connection, if any, was accepted before it could end)."""
        while True:
            try:
                got = b"dgram:" + self.dgram.recv(4096)
            except OSError:
                break
            with self.lock:
                self.received.append(got)
        with contextlib.suppress(OSError):
            data = os.read(self.fifo, 4096)
            if data:
                with self.lock:
                    self.received.append(b"fifo:" + data)
        with self.lock:
            found, self.received = self.received, []
        return found

    def close(self) -> None:
        self.stream.shutdown(socket.SHUT_RDWR)
        self.stream.close()
        self.thread.join(timeout=5)
        self.dgram.close()
        os.close(self.fifo)


@pytest.fixture
def places(tmp_path: Path) -> Iterator[dict[str, tuple[Path, Endpoints]]]:
    """The workspace (endpoints in a sub-folder of it) and a second tree bound read-only
    (another root: a /srv-like tree), each with its own endpoints."""
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "hello.txt").write_text("hello\n")
    srv = tmp_path / "srv"
    srv.mkdir()
    found = {"workspace": (ws, Endpoints(ws / "sub")), "srv": (srv, Endpoints(srv))}
    yield found
    for _, endpoints in found.values():
        endpoints.close()


def _unsandboxed(ws: Path, script: str, folder: Path) -> None:
    subprocess.run(["bash", "-c", script, "control", str(folder)], cwd=ws, capture_output=True,
                   timeout=30, check=False, stdin=subprocess.DEVNULL)  # fmt: skip


@pytest.mark.parametrize("network", [False, True], ids=["no-network", "network"])
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_no_command_reaches_a_host_socket_or_fifo(
    mechanism: Mechanism,
    network: bool,
    places: dict[str, tuple[Path, Endpoints]],
    tmp_path: Path,
) -> None:
    require(mechanism)
    ws = places["workspace"][0]
    roots = [ws, places["srv"][0]]
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    reached, unseen = [], []
    missing: set[str] = set()
    for where, (_, endpoints) in places.items():
        for name, script in ATTACKS.items():
            program = name.split("-")[0]
            if program in PROGRAMS and shutil.which(program) is None:
                missing.add(program)
                continue
            _unsandboxed(ws, script, endpoints.folder)
            control = endpoints.collect()
            if name != "python-pair-stream" and not any(b"MARK" in d for d in control):
                unseen.append(f"{where} {name}: {control}")
            proc = run_in(mechanism, ws, script, roots=roots, network=network,
                          scratch=scratch, args=[str(endpoints.folder)])  # fmt: skip
            got = endpoints.collect()
            if got:
                reached.append(f"{where} {name}: {got} ({proc.stderr.strip()[-200:]})")
    assert unseen == [], "the control did not reach the endpoints:\n" + "\n".join(unseen)
    assert reached == [], "\n".join(reached)
    need(not missing, f"not installed, their attacks did not run: {sorted(missing)}")


SCRATCH_SCRIPT = r"""
set -e
d="${TMPDIR:-/tmp}"
mkfifo "$d/f"
cat "$d/f" > "$d/out" & echo through-a-fifo > "$d/f"; wait
cat "$d/out"
python3 -c 'import socket; a, b = socket.socketpair(); a.sendall(b"pair")
print(b.recv(4).decode())'
echo to-stdout > /dev/stdout
echo to-null > /dev/null
"""


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_own_scratch_fifos_and_socket_pairs_still_work(
    mechanism: Mechanism, tmp_path: Path
) -> None:
    require(mechanism)
    ws = tmp_path / "ws"
    ws.mkdir()
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    proc = run_in(mechanism, ws, SCRATCH_SCRIPT, scratch=scratch)
    assert proc.stdout.split() == ["through-a-fifo", "pair", "to-stdout"], proc.stderr


MULTIPROCESSING = """import multiprocessing as m
if __name__ == "__main__":
    with m.Pool(2) as p: print(sum(p.map(abs, [-1, -2])))"""


def test_multiprocessing_still_works_under_bubblewrap(tmp_path: Path) -> None:
    """Its semaphores live in /dev/shm, the sandbox's own (granted with /dev). Under the
    Landlock fallback /dev is hidden, so it never worked there."""
    require("bubblewrap")
    proc = run_in("bubblewrap", tmp_path, 'python3 -c "$1"', args=[MULTIPROCESSING])
    assert proc.stdout.split() == ["3"], proc.stderr


def test_tmp_is_granted_only_above_no_host_tree(tmp_path: Path) -> None:
    """Landlock grants a folder's rights to everything below it, across mounts: /tmp is
    writable (FIFOs included) only when no workspace root or toolchain is bound below it;
    otherwise the command's scratch is a private tmpfs at PRIVATE_TMP."""
    need(landlock_abi() >= 1, "no Landlock in this kernel: nothing is stacked")

    def grants(argv: list[str]) -> list[str]:
        start = len(argv) - 1 - argv[::-1].index(SANDBOX_LAUNCHER)  # the launcher's argv
        end = argv.index("--", start)
        return [argv[i + 1] for i in range(start, end) if argv[i] == "--write"]

    elsewhere = plan_argv(Path("/srv/project"), ["true"])
    assert grants(elsewhere) == ["/tmp", "/var/tmp", "/run", "/dev"]
    assert "TMPDIR=" + PRIVATE_TMP not in elsewhere
    under_tmp = plan_argv(tmp_path, ["true"])
    assert grants(under_tmp) == ["/var/tmp", "/run", "/dev", PRIVATE_TMP]
    assert "HOME=" + PRIVATE_TMP in under_tmp and "TMPDIR=" + PRIVATE_TMP in under_tmp
    assert "--filesystem-only" in under_tmp


def _bubblewrap_probe() -> tuple[bool, str]:
    def build(workdir: Path, argv: object, scratch: Path) -> list[str]:
        return sandbox_argv(workdir, list(argv), mechanism="bubblewrap", scratch=scratch)  # type: ignore[call-overload]

    result = probe_plan(build)
    return result.ok, result.why


def test_the_self_test_proves_both_guards(monkeypatch: pytest.MonkeyPatch) -> None:
    """The self-test holds with both guards, and fails (naming what was reached) with the
    Unix-socket rule or the stacked Landlock taken away."""
    require("bubblewrap")
    assert _bubblewrap_probe() == (True, PROOF)
    with monkeypatch.context() as m:
        m.setattr(bwrap_mod, "PLAN_SECCOMP_GROUPS", ["keyrings"])
        ok, why = _bubblewrap_probe()
    assert not ok and "host IPC was reached" in why and "Unix-socket connect" in why, why
    assert "datagram" in why, why
    with monkeypatch.context() as m:
        m.setattr(bwrap_mod, "landlock_abi", lambda: 0)
        ok, why = _bubblewrap_probe()
    assert not ok and "a write to the FIFO" in why and "Unix-socket" not in why, why


def test_the_self_test_cleans_up_its_endpoints(tmp_path: Path) -> None:
    """Nothing the probe made is left behind (no socket file, no FIFO)."""
    require("bubblewrap")
    made: list[Path] = []

    def build(workdir: Path, argv: object, scratch: Path) -> list[str]:
        made.append(workdir)
        return sandbox_argv(workdir, list(argv), mechanism="bubblewrap", scratch=scratch)  # type: ignore[call-overload]

    assert probe_plan(build).ok
    for folder in (made[0], made[0].parent / "srv"):
        assert not folder.exists() or not any(
            stat.S_ISSOCK(p.lstat().st_mode) or stat.S_ISFIFO(p.lstat().st_mode)
            for p in folder.iterdir()
        )


# System V IPC by key: a host segment's memory written, a message sent to a host queue.
# Under bubblewrap the ipc namespace is the sandbox's own; under Landlock
# the filter refuses the calls (sysv_ipc).
SYSV_ATTACK = """
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
shm_key, msg_key = int(sys.argv[1]), int(sys.argv[2])
shm = libc.shmget(shm_key, 0, 0)
if shm >= 0:
    at = libc.shmat(shm, None, 0)
    if at not in (None, ctypes.c_void_p(-1).value):
        ctypes.memmove(at, b"MARK", 4)
queue = libc.msgget(msg_key, 0)
if queue >= 0:
    message = ctypes.create_string_buffer(ctypes.c_long(1).value.to_bytes(8, "little") + b"MARK")
    libc.msgsnd(queue, message, 4, 0o4000)  # IPC_NOWAIT
"""


@pytest.fixture
def sysv_objects() -> Iterator[tuple[int, int, Any, int]]:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    shm_key, msg_key = 0x51A000 + os.getpid() % 4096, 0x52A000 + os.getpid() % 4096
    shm = libc.shmget(shm_key, 4096, 0o1000 | 0o600)  # IPC_CREAT
    queue = libc.msgget(msg_key, 0o1000 | 0o600)
    assert shm >= 0 and queue >= 0, ctypes.get_errno()
    at = libc.shmat(shm, None, 0)
    yield shm_key, msg_key, (libc, at, shm), queue
    libc.shmdt(ctypes.c_void_p(at))
    libc.shmctl(shm, 0, None)
    libc.msgctl(queue, 0, None)


def _sysv_reached(libc: Any, at: int, queue: int) -> list[str]:
    found = []
    if ctypes.string_at(at, 4) == b"MARK":
        found.append("shared memory written")
        ctypes.memset(at, 0, 4)
    buffer = ctypes.create_string_buffer(64)
    if libc.msgrcv(queue, buffer, 56, 0, 0o4000) >= 0:
        found.append("message received")
    return found


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_no_command_reaches_host_system_v_ipc(
    mechanism: Mechanism, sysv_objects: tuple[int, int, Any, int], tmp_path: Path
) -> None:
    require(mechanism)
    shm_key, msg_key, (libc, at, _), queue = sysv_objects
    args = [SYSV_ATTACK, str(shm_key), str(msg_key)]
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    control = subprocess.run(["python3", "-c", *args], capture_output=True, timeout=30, check=False)
    reached = ["shared memory written", "message received"]
    assert _sysv_reached(libc, at, queue) == reached, control.stderr
    proc = run_in(mechanism, tmp_path, 'python3 -c "$@"', scratch=scratch, args=args)
    assert _sysv_reached(libc, at, queue) == [], proc.stderr
