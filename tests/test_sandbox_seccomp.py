"""The seccomp filters, read by a small classic-BPF interpreter: every syscall and ioctl
request gets the verdict the tables say, and the program is well formed. Then, under
Landlock, the ioctls that change a file opened read-only fail for real, and ordinary
commands (the benign corpus) run exactly as they do without the ioctl filter."""

from __future__ import annotations

import base64
import os
import shutil
import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plan_lsp.policy.sandbox import landlock as landlock_mod
from plan_lsp.policy.sandbox.landlock_launch import (
    AUDIT_ARCHES,
    EACCES,
    HARMLESS_IOCTLS,
    OWN_PROCESS_ONLY,
    SOCKET_CALLS,
    SYSCALL_GROUPS,
    seccomp_bytes,
    seccomp_program,
)
from tests.sandbox_support import require, run_in
from tests.test_shell_benign_exec import _quote, _repository, corpus_lines

ALLOW, DENY, KILL = 0x7FFF0000, 0x00050000 | EACCES, 0x80000000
LANDLOCK_GROUPS = [
    "metadata", "keyrings", "ioctls", "other_processes", "unix_sockets", "sysv_ipc", "sockets",
]  # fmt: skip
PLAN_GROUPS = ["keyrings", "unix_sockets", "io_uring"]  # bubblewrap's plan profile


def run_bpf(program: list[tuple[int, int, int, int]], arch: int, nr: int, args: list[int]) -> int:
    """The verdict of a classic BPF seccomp program for one syscall (little-endian data)."""
    data = struct.pack("=iIQ6Q", nr, arch, 0, *args)
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = program[pc]
        if code == 0x20:  # ld [k]
            acc = struct.unpack_from("=I", data, k)[0]
            pc += 1
        elif code == 0x54:  # and k
            acc &= k
            pc += 1
        elif code in (0x15, 0x35):  # jeq, jge
            taken = acc == k if code == 0x15 else acc >= k
            pc += 1 + (jt if taken else jf)
        elif code == 0x06:
            return k
        else:
            raise AssertionError(f"unexpected instruction {code:#x}")


def _expected(machine: str, groups: list[str], nr: int, args: list[int]) -> int:
    table = SYSCALL_GROUPS[machine]
    if nr >= 0x40000000:
        return DENY
    if any(nr in table[g] for g in groups if g in table and g != "ioctls"):
        return DENY
    if "unix_sockets" in groups and nr == SOCKET_CALLS[machine][0]:
        return DENY if args[0] & 0xFFFFFFFF == 1 else ALLOW  # AF_UNIX
    if "unix_sockets" in groups and nr == SOCKET_CALLS[machine][1]:
        return DENY if args[1] & 0xF == 2 else ALLOW  # SOCK_DGRAM, whatever the flags
    if "ioctls" in groups and nr == table["ioctls"][0]:
        return ALLOW if args[1] & 0xFFFFFFFF in HARMLESS_IOCTLS.values() else DENY
    own = OWN_PROCESS_ONLY[machine]
    if "other_processes" in groups and nr in own:
        return ALLOW if all(args[i] & 0xFFFFFFFF == v for i, v in own[nr]) else DENY
    return ALLOW


@pytest.mark.parametrize("machine", sorted(AUDIT_ARCHES))
@pytest.mark.parametrize(
    "groups",
    [
        LANDLOCK_GROUPS,
        LANDLOCK_GROUPS[:-1],  # the network allowed: Unix sockets still denied
        PLAN_GROUPS,
        ["metadata", "keyrings", "ioctls"],
        ["keyrings", "other_processes"],
    ],
)
@given(
    nr=st.one_of(
        st.integers(0, 600),
        st.sampled_from(
            [16, 29, 0x40000010, 302, 261, 141, 140, 251, 30, 203, 122, 41, 53, 198, 199, 425]
        ),
    ),
    first=st.one_of(st.sampled_from([0, 1, 2, 10, 1 << 32, 4242]), st.integers(0, 2**64 - 1)),
    request=st.one_of(
        st.sampled_from(sorted(HARMLESS_IOCTLS.values())),
        st.sampled_from([0, 1, 2, 5, 1 << 32, 0x80002, 0x80802, 0x80001, (1 << 32) | 2]),
        st.integers(0, 2**64 - 1),
        st.sampled_from([0x40086602, 0x401C5820, 0x40049409, 0xC0189436, 0x40806685]),
    ),
)
def test_every_syscall_gets_the_tables_verdict(
    machine: str, groups: list[str], nr: int, first: int, request: int
) -> None:
    program = seccomp_program(machine, groups)
    arch = AUDIT_ARCHES[machine]
    args = [first, request, 0, 0, 0, 0]
    assert run_bpf(program, arch, nr, args) == _expected(machine, groups, nr, args)
    assert run_bpf(program, arch ^ 1, nr, args) == KILL


def test_the_high_word_of_a_request_changes_nothing() -> None:
    """The kernel reads an ioctl request as 32 bits; so does the filter."""
    program = seccomp_program("x86_64", LANDLOCK_GROUPS)
    arch = AUDIT_ARCHES["x86_64"]
    tcgets, setflags = HARMLESS_IOCTLS["TCGETS"], 0x40086602
    assert run_bpf(program, arch, 16, [0, (1 << 32) | tcgets, 0, 0, 0, 0]) == ALLOW
    assert run_bpf(program, arch, 16, [0, (1 << 40) | setflags, 0, 0, 0, 0]) == DENY


def test_another_processs_limits_and_scheduling_are_denied_its_own_allowed() -> None:
    """prlimit64 on another pid (RLIMIT_CPU below its used time kills it), renice of
    another process or of every process of the user: denied; on the caller itself (pid 0,
    as `ulimit`, `nice`, `ionice`, `taskset CMD` call them): allowed."""
    program = seccomp_program("x86_64", LANDLOCK_GROUPS)
    arch = AUDIT_ARCHES["x86_64"]
    prlimit64, setpriority, ioprio_set = 302, 141, 251
    assert run_bpf(program, arch, prlimit64, [4242, 0, 0, 0, 0, 0]) == DENY
    assert run_bpf(program, arch, prlimit64, [0, 7, 0, 0, 0, 0]) == ALLOW
    assert run_bpf(program, arch, setpriority, [2, 0, 19, 0, 0, 0]) == DENY  # PRIO_USER
    assert run_bpf(program, arch, setpriority, [0, 4242, 19, 0, 0, 0]) == DENY
    assert run_bpf(program, arch, setpriority, [0, 0, 19, 0, 0, 0]) == ALLOW
    assert run_bpf(program, arch, ioprio_set, [1, 0, 7, 0, 0, 0]) == ALLOW
    assert run_bpf(program, arch, ioprio_set, [1, 4242, 7, 0, 0, 0]) == DENY


def test_io_uring_is_denied_even_with_the_network() -> None:
    """A ring's operations (IORING_OP_FSETXATTR, ...) never pass through the filter."""
    for machine in AUDIT_ARCHES:
        program = seccomp_program(machine, ["metadata", "keyrings", "ioctls"])
        assert run_bpf(program, AUDIT_ARCHES[machine], 425, [0] * 6) == DENY


def test_unix_sockets_are_denied_socket_pairs_of_streams_allowed() -> None:
    """socket(AF_UNIX, ...) fails (a host service's socket file is reachable through any
    mount); socketpair of streams or seqpackets works (connected to each other for good),
    of datagrams fails (sendto(2) reaches any path). Flags on the type change nothing.
    TCP and UDP sockets stay as the network setting has them."""
    for machine, (socket_nr, pair_nr) in SOCKET_CALLS.items():
        arch = AUDIT_ARCHES[machine]
        for groups in (PLAN_GROUPS, LANDLOCK_GROUPS[:-1]):
            program = seccomp_program(machine, groups)
            assert run_bpf(program, arch, socket_nr, [1, 1, 0, 0, 0, 0]) == DENY
            assert run_bpf(program, arch, socket_nr, [1, 0x80002, 0, 0, 0, 0]) == DENY
            assert run_bpf(program, arch, socket_nr, [2, 1, 0, 0, 0, 0]) == ALLOW  # AF_INET
            assert run_bpf(program, arch, socket_nr, [10, 2, 0, 0, 0, 0]) == ALLOW  # AF_INET6
            for kind in (1, 5, 0x80001, 0x80805):  # stream, seqpacket (+ CLOEXEC, NONBLOCK)
                assert run_bpf(program, arch, pair_nr, [1, kind, 0, 0, 0, 0]) == ALLOW
            for kind in (2, 0x80002, 0x802, 0x80802):
                assert run_bpf(program, arch, pair_nr, [1, kind, 0, 0, 0, 0]) == DENY
            assert run_bpf(program, arch, 425, [0] * 6) == (
                DENY if "io_uring" in groups or "metadata" in groups else ALLOW
            )


def test_the_bytes_are_the_program() -> None:
    raw = seccomp_bytes("x86_64", LANDLOCK_GROUPS)
    program = seccomp_program("x86_64", LANDLOCK_GROUPS)
    assert len(raw) == 8 * len(program)
    assert struct.unpack_from("=HBBI", raw, 8 * 3) == program[3]


# -- under Landlock -------------------------------------------------------------------------

# Each request on a workspace file opened read-only; none may succeed.
CHANGING_IOCTLS = {
    "FS_IOC_SETFLAGS": "fcntl.ioctl(f, 0x40086602, struct.pack('l', 0xC0))",
    "FS_IOC_FSSETXATTR": "fcntl.ioctl(f, 0x401C5820, bytes(28))",
    "FS_IOC_SETVERSION": "fcntl.ioctl(f, 0x40087602, struct.pack('l', 7))",
    "FICLONE": "fcntl.ioctl(os.open(os.environ['TMPDIR'] + '/c', os.O_WRONLY | os.O_CREAT),"
    " 0x40049409, f)",
    "FIDEDUPERANGE": "fcntl.ioctl(f, 0xC0189436, struct.pack('QQHHI', 0, 4, 1, 0, 0)"
    " + struct.pack('qQiI', f, 0, 0, 0) + bytes(8))",
    "FS_IOC_ENABLE_VERITY": "fcntl.ioctl(f, 0x40806685, struct.pack('II', 1, 1) + bytes(120))",
}
PROBE = """
import fcntl, os, struct, sys
f = os.open("hello.txt", os.O_RDONLY)
try:
    {call}
    print("SUCCEEDED")
except OSError as exc:
    print("refused", exc.errno)
"""


@pytest.mark.parametrize("name", sorted(CHANGING_IOCTLS))
def test_ioctls_that_change_a_read_only_file_fail(name: str, tmp_path: Path) -> None:
    require("landlock")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "hello.txt").write_text("hello\n")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    before = os.stat(ws / "hello.txt")
    script = PROBE.format(call=CHANGING_IOCTLS[name])
    proc = run_in("landlock", ws, 'python3 -c "$1"', scratch=scratch, args=[script])
    assert proc.stdout.split() == ["refused", str(EACCES)], proc.stdout + proc.stderr
    after = os.stat(ws / "hello.txt")
    assert (before.st_mtime_ns, before.st_ctime_ns) == (after.st_mtime_ns, after.st_ctime_ns)


def test_benign_commands_run_the_same_without_the_ioctl_filter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every line of the benign corpus, once under the real launcher and once under a copy
    whose filter lets every ioctl through: the same exit codes and output. A difference is
    an ioctl an ordinary command needs that HARMLESS_IOCTLS lacks."""
    require("landlock")
    home = tmp_path / "home"
    home.mkdir()
    ws = _repository(tmp_path, home)
    lines = corpus_lines()
    script = "\n".join(
        f"out=$(bash -c {_quote(c)} </dev/null 2>&1); "
        f'echo "{n} $? $(printf %s "$out" | sed "s/[0-9][0-9]*/N/g" | base64 -w0)"'
        for n, c in enumerate(lines)
    )
    env = {**os.environ, "HOME": str(home)}

    def batch() -> list[str]:
        scratch = tmp_path / "scratch"
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir()
        # ~480 command lines in one batch: minutes on a loaded machine, never a hang.
        proc = run_in("landlock", ws, script, scratch=scratch, env=env, timeout=900)
        return proc.stdout.splitlines()

    filtered = batch()
    permissive = tmp_path / "launcher.py"
    text = Path(landlock_mod.LAUNCHER).read_text()
    permissive.write_text(text.replace('"keyrings", "ioctls"', '"keyrings"'))
    assert permissive.read_text() != text
    monkeypatch.setattr(landlock_mod, "LAUNCHER", permissive)
    unfiltered = batch()
    assert len(filtered) == len(lines) == len(unfiltered)
    differ = [
        f"{lines[int(a.split()[0])]}\n  filtered:   {_shown(a)}\n  unfiltered: {_shown(b)}"
        for a, b in zip(filtered, unfiltered, strict=True)
        if _in_any_order(a) != _in_any_order(b)
    ]
    assert differ == [], "\n".join(differ)


def _in_any_order(line: str) -> tuple[str, list[str]]:
    """A result's status and its output lines in any order: ripgrep walks in parallel, so
    the order of the files it lists differs from run to run (an ioctl never reorders)."""
    _, status, *encoded = line.split(" ", 2)
    output = base64.b64decode(encoded[0]).decode(errors="replace") if encoded else ""
    return status, sorted(output.splitlines())


def _shown(line: str) -> str:
    """`N STATUS BASE64` as `exit STATUS: output`."""
    _, status, *encoded = line.split(" ", 2)
    output = base64.b64decode(encoded[0]).decode(errors="replace") if encoded else ""
    return f"exit {status}: {output[:300]!r}"


def test_python_runs_under_the_filter(tmp_path: Path) -> None:
    """Control for the probes above: the interpreter itself (isatty on every open) works."""
    require("landlock")
    (tmp_path / "f.txt").write_text("x\n")
    proc = run_in("landlock", tmp_path, "python3 -c \"print(open('f.txt').isatty())\"")
    assert proc.stdout.strip() == "False", proc.stderr
