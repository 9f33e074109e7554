"""The Landlock fallback, forced even where bubblewrap works: what it blocks, and the
launcher's refusal to run anything it could not restrict.

Skips without Landlock, FAILS when CI=true."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from plan_lsp.policy.sandbox import probe_sandbox
from plan_lsp.policy.sandbox.landlock import LAUNCHER, landlock_options, readable_tree
from plan_lsp.policy.sandbox.landlock_launch import AUDIT_ARCHES, SYSCALL_GROUPS, seccomp_program
from tests.sandbox_support import (
    KEYRING_READER,
    fake_home,
    listener,
    require,
    run_in,
    session_key,
    small_workspace,
)


@pytest.fixture(autouse=True)
def landlock() -> None:
    require("landlock")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return small_workspace(tmp_path, "hello\n")


def _run(ws: Path, script: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return run_in("landlock", ws, script, **kw)  # type: ignore[arg-type]


def test_self_test_proves_landlock() -> None:
    status = probe_sandbox(["landlock"])
    assert status.mechanism == "landlock"
    assert not status.build_profile and "permission prompt" in status.detail


def test_reads_work_writes_fail(ws: Path, tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    proc = _run(
        ws,
        "cat hello.txt; pwd; echo x > new.txt; rm hello.txt; mkdir d; ln -s a b; "
        'echo s > "$TMPDIR/s" && cat "$TMPDIR/s"; echo x > /dev/null && echo devnull-ok',
        scratch=scratch,
    )
    assert proc.stdout.splitlines() == ["hello", str(ws.resolve()), "s", "devnull-ok"]
    assert sorted(p.name for p in ws.iterdir()) == ["hello.txt"]
    assert (scratch / "s").exists()


def test_metadata_changes_fail(ws: Path) -> None:
    before = os.stat(ws / "hello.txt")
    proc = _run(ws, "chmod 000 hello.txt; touch -d 2000-01-01 hello.txt; echo done")
    after = os.stat(ws / "hello.txt")
    assert "done" in proc.stdout
    assert (before.st_mode, before.st_mtime_ns) == (after.st_mode, after.st_mtime_ns)


def test_host_tmp_home_and_devices_are_unreadable(tmp_path: Path, ws: Path) -> None:
    home = fake_home(tmp_path)
    env = {**os.environ, "HOME": str(home)}
    proc = _run(
        ws,
        f"cat {home}/.ssh/id_ed25519; ls /tmp; cat {home}/.cargo/bin/tool; "
        "head -c 1 /dev/sda 2>&1; ls /run >/dev/null && echo run-listed",
        env=env,
    )
    assert "PRIVATE KEY" not in proc.stdout
    assert "toolchain" in proc.stdout  # toolchains stay usable
    assert "run-listed" not in proc.stdout


def test_network_sockets_are_denied(ws: Path, tmp_path: Path) -> None:
    path = tmp_path / "unix.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    try:
        with listener() as tcp:
            script = (
                f"exec 3<>/dev/tcp/127.0.0.1/{tcp.port} && echo tcp; "
                f"echo x > /dev/udp/127.0.0.1/{tcp.port} && echo udp; "
                "python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); "
                f's.connect(sys.argv[1]); print("unix")\' {path}'
            )
            closed = _run(ws, script)
            opened = _run(ws, f"exec 3<>/dev/tcp/127.0.0.1/{tcp.port} && echo tcp", network=True)
    finally:
        server.close()
    assert closed.stdout.split() == []
    assert "tcp" in opened.stdout
    assert tcp.connections == 1


def test_server_process_is_out_of_reach(ws: Path) -> None:
    secret = "sk-" + os.urandom(6).hex()
    env = {**os.environ, "OPENAI_API_KEY": secret}
    proc = _run(
        ws,
        'cat "/proc/$1/environ"; kill -0 "$1" && echo signalled; env',
        env=env,
        args=[str(os.getpid())],
    )
    assert secret not in proc.stdout and "signalled" not in proc.stdout


def test_launcher_refuses_to_run_unrestricted(ws: Path) -> None:
    marker = ws / "ran"
    for bad in (["--bogus", "x"], ["--read"], ["--cpu", "many"], ["--chdir"]):
        proc = subprocess.run(
            [sys.executable, "-I", "-S", str(LAUNCHER), *bad, "--", "touch", str(marker)],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert proc.returncode == 126, (bad, proc.stderr)
        assert "not running the command" in proc.stderr
    # Nothing granted at all: restricted so tightly that nothing can even be executed.
    proc = subprocess.run(
        [sys.executable, "-I", "-S", str(LAUNCHER), "--", "touch", str(marker)],
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert proc.returncode != 0
    assert not marker.exists()


def test_options_grant_everything_but_the_hidden(tmp_path: Path) -> None:
    (tmp_path / "keep").mkdir()
    (tmp_path / "hide").mkdir()
    (tmp_path / "keep" / "f").write_text("x")
    assert readable_tree(tmp_path, [tmp_path / "hide"]) == [str(tmp_path / "keep")]
    options = landlock_options(
        tmp_path, [tmp_path], network=False, scratch=tmp_path / "keep", base_env=os.environ
    )
    assert options[:2] == ["--chdir", str(tmp_path.resolve())]
    assert "--network" not in options
    reads = [options[i + 1] for i, o in enumerate(options) if o == "--read"]
    assert "/tmp" not in reads and "/" not in reads and str(tmp_path.resolve()) in reads


@pytest.mark.parametrize("machine", sorted(AUDIT_ARCHES))
@pytest.mark.parametrize("groups", [["metadata", "keyrings"], ["metadata", "keyrings", "sockets"]])
def test_seccomp_program_jumps_land_inside(machine: str, groups: list[str]) -> None:
    program = seccomp_program(machine, groups)
    for i, (code, jt, jf, _k) in enumerate(program):
        if code in (0x15, 0x35):
            assert i + 1 + jt < len(program) and i + 1 + jf < len(program)
    deny_at = len(program) - 2
    assert program[deny_at][0] == 0x06
    denied = {
        k for i, (code, jt, _jf, k) in enumerate(program) if code == 0x15 and i + 1 + jt == deny_at
    }
    assert denied == {nr for g in groups for nr in SYSCALL_GROUPS[machine][g]}
    assert program[-1] == (0x06, 0, 0, 0x80000000)  # a foreign architecture is killed
    with pytest.raises(Exception, match="no seccomp filter"):
        seccomp_program("pdp11", groups)


def test_the_server_keyring_is_out_of_reach(ws: Path) -> None:
    keyctl, key = session_key("keyring-secret")
    proc = _run(ws, f'python3 -c "$1" {keyctl} {key}', args=[KEYRING_READER])
    assert "keyring-secret" not in proc.stdout
