"""Helpers shared by the sandbox tests: requiring a mechanism, loopback listeners, runs."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import cache
from pathlib import Path

from plan_lsp.policy.sandbox import Mechanism, SandboxStatus, probe_sandbox, sandbox_argv
from tests.needs import need, process_alive


@cache
def _status(mechanism: Mechanism) -> SandboxStatus:
    return probe_sandbox([mechanism])


def require(mechanism: Mechanism) -> None:
    """Skip when `mechanism` does not work here, but FAIL under CI (CI=true): CI installs
    bubblewrap and runs on a kernel with Landlock, so a missing one is a broken setup."""
    status = _status(mechanism)
    need(
        status.mechanism == mechanism,
        f"{mechanism} does not work on this machine: {status.detail}",
    )


def run_in(
    mechanism: Mechanism,
    workdir: Path,
    script: str,
    *,
    roots: Sequence[Path] = (),
    network: bool = False,
    profile: str = "plan",
    scratch: Path | None = None,
    env: Mapping[str, str] | None = None,
    args: Sequence[str] = (),
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """`bash -c script` through `sandbox_argv`, spawned with `env` (default: ours); `timeout`
    only guards against a hang."""
    base = dict(os.environ if env is None else env)
    argv = sandbox_argv(
        workdir,
        ["bash", "-c", script, "sandboxed", *args],
        roots=roots,
        network=network,
        profile=profile,  # type: ignore[arg-type]
        mechanism=mechanism,
        scratch=scratch,
        base_env=base,
    )
    return subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
        env=base,
    )


class Listener:
    """A loopback TCP listener that counts the connections it accepted."""

    def __init__(self) -> None:
        self.server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(16)
        self.server.settimeout(0.2)
        self.port = int(self.server.getsockname()[1])
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.server.close()


@contextmanager
def listener() -> Iterator[Listener]:
    server = Listener()
    try:
        yield server
    finally:
        server.close()


KEYRING_READER = """
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
buf = ctypes.create_string_buffer(64)
n = libc.syscall(int(sys.argv[1]), 11, int(sys.argv[2]), buf, 64)  # KEYCTL_READ
print(buf.raw[: max(n, 0)].decode(errors="replace"))
"""
KEYCTL = {"x86_64": 250, "aarch64": 219}


def session_key(secret: str) -> tuple[int, int]:
    """(keyctl syscall number, id of a key holding `secret`) in a fresh anonymous session
    keyring of this test process, which the sandboxed children inherit."""
    import ctypes

    keyctl = KEYCTL.get(os.uname().machine)
    need(keyctl is not None, f"no keyctl number for {os.uname().machine}")
    assert keyctl is not None
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    add_key = {"x86_64": 248, "aarch64": 217}[os.uname().machine]
    assert libc.syscall(keyctl, 1, None) >= 0  # KEYCTL_JOIN_SESSION_KEYRING, anonymous
    data = secret.encode()
    key = libc.syscall(add_key, b"user", b"plan-lsp-test", data, len(data), -3)
    assert key >= 0, ctypes.get_errno()
    return keyctl, int(key)


def small_workspace(root: Path, text: str) -> Path:
    """`root/ws` holding `hello.txt` with `text`."""
    ws = root / "ws"
    ws.mkdir()
    (ws / "hello.txt").write_text(text)
    return ws


def fake_home(root: Path) -> Path:
    """A home directory with secrets and a toolchain, as a real one would have."""
    home = root / "home" / "user"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("aws_secret_access_key=SECRET\n")
    (home / ".cargo" / "bin").mkdir(parents=True)
    (home / ".cargo" / "credentials.toml").write_text("token = SECRET\n")
    (home / ".cargo" / "bin" / "tool").write_text("toolchain\n")
    return home


def marked_processes(marker: str) -> list[int]:
    """Living processes (not zombies) whose command line holds `marker`, seen from here:
    also those in a sandbox's own pid namespace, whose `$$` means nothing outside it."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline and process_alive(int(entry)):
            found.append(int(entry))
    return found
