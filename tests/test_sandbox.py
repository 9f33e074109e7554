"""The bubblewrap sandbox really is read-only and network-less."""

from __future__ import annotations

import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from plan_lsp.policy.sandbox import sandbox_argv, sandbox_kind

needs_bwrap = pytest.mark.skipif(
    sandbox_kind() is None, reason="bubblewrap is not installed or does not work on this machine"
)


def _run(workdir: Path, script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        sandbox_argv(workdir, ["bash", "-c", script]),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "hello.txt").write_text("hello from the workspace\n")
    return ws


def test_argv_follows_the_recipe(tmp_path: Path) -> None:
    argv = sandbox_argv(tmp_path, ["ls", "-la"])
    joined = " ".join(argv)
    for part in (
        "--unshare-all",
        "--unshare-user",
        "--uid 65534",
        "--gid 65534",
        "--cap-drop ALL",
        "--ro-bind / /",
        "--tmpfs /tmp",
        "--tmpfs /run",
        "--tmpfs /var/tmp",
        f"--ro-bind {tmp_path.resolve()} {tmp_path.resolve()}",
        f"--chdir {tmp_path.resolve()}",
        "--die-with-parent",
        "--new-session",
        "--setenv HOME /tmp",
    ):
        assert part in joined
    assert argv[-3:] == ["--", "ls", "-la"]


@needs_bwrap
def test_read_works(workdir: Path) -> None:
    proc = _run(workdir, "cat hello.txt && id -u")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["hello from the workspace", "65534"]


@needs_bwrap
def test_write_fails_read_only(workdir: Path) -> None:
    proc = _run(workdir, "echo x > new.txt")
    assert proc.returncode != 0
    assert "Read-only file system" in proc.stderr
    assert not (workdir / "new.txt").exists()
    proc = _run(workdir, "rm hello.txt")
    assert proc.returncode != 0
    assert (workdir / "hello.txt").exists()


@needs_bwrap
def test_remount_fails(workdir: Path) -> None:
    proc = _run(workdir, "mount -o remount,rw / && echo remounted; touch /remount-probe")
    assert "remounted" not in proc.stdout
    assert not Path("/remount-probe").exists()


@needs_bwrap
def test_scratch_tmp_is_private(workdir: Path, tmp_path: Path) -> None:
    proc = _run(workdir, "echo scratch > /tmp/scratch.txt && cat /tmp/scratch.txt")
    assert proc.returncode == 0 and proc.stdout.strip() == "scratch"
    assert not Path("/tmp/scratch.txt").exists()


@pytest.fixture
def unix_server(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "host.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    server.settimeout(10)

    def serve() -> None:
        try:
            conn, _ = server.accept()
            conn.sendall(b"reached\n")
            conn.close()
        except OSError:
            pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield path
    server.close()
    thread.join(timeout=5)


@needs_bwrap
def test_unix_socket_in_host_tmp_is_unreachable(workdir: Path, unix_server: Path) -> None:
    assert str(unix_server).startswith("/tmp/")
    script = (
        "python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); "
        f"s.connect(sys.argv[1]); print(s.recv(16).decode())' {unix_server}"
    )
    proc = _run(workdir, script)
    assert proc.returncode != 0
    assert "reached" not in proc.stdout
    # Control: the same client outside the sandbox does reach it.
    outside = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, timeout=30, check=False
    )
    assert "reached" in outside.stdout


@pytest.fixture
def tcp_server() -> Iterator[int]:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    server.settimeout(10)
    port = int(server.getsockname()[1])

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
                conn.close()
            except OSError:
                return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield port
    server.close()
    thread.join(timeout=5)


@needs_bwrap
def test_network_connection_fails(workdir: Path, tcp_server: int) -> None:
    script = f"exec 3<>/dev/tcp/127.0.0.1/{tcp_server} && echo connected"
    proc = _run(workdir, script)
    assert "connected" not in proc.stdout
    assert proc.returncode != 0
    outside = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, timeout=30, check=False
    )
    assert "connected" in outside.stdout
