"""The Landlock fallback (docs/security.md §4): "metadata: the same seccomp filter denies
chmod, chown, utime and xattr changes, which Landlock does not mediate". Inode flags are
metadata too, and they change through ioctl(FS_IOC_SETFLAGS) on a file opened read-only,
which neither Landlock (only device ioctls) nor the filter covers."""

from __future__ import annotations

import fcntl
import struct
from pathlib import Path

import pytest

from plan_lsp.policy.sandbox import LANDLOCK, probe_sandbox
from plan_lsp.tools import bash as bash_tool
from tests.needs import need

FS_IOC_GETFLAGS = 0x80086601
FS_NODUMP_FL = 0x00000040
FS_NOATIME_FL = 0x00000080


def _flags(path: Path) -> int:
    with path.open("rb") as handle:
        buf = fcntl.ioctl(handle.fileno(), FS_IOC_GETFLAGS, struct.pack("l", 0))
    return int(struct.unpack("l", buf)[0])


async def test_landlock_plan_command_cannot_change_inode_flags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attacker: on a machine where the sandbox is Landlock, the injected model runs (in
    plan mode, allowed by the `sandboxed` rules: an interpreter, no intent to write shown)
    `python3 -c '… fcntl.ioctl(open("hello.py").fileno(), FS_IOC_SETFLAGS, nodump|noatime)'`.

    Should: the file is unchanged, as under bubblewrap (a read-only mount refuses the
    ioctl). Today: the flags of the workspace file change (`lsattr` shows `dA`)."""
    status = probe_sandbox([LANDLOCK])
    need(status.mechanism == LANDLOCK, f"Landlock does not work here: {status.detail}")
    monkeypatch.setattr(bash_tool, "sandbox_status", lambda: status)
    ws = (tmp_path / "ws").resolve()
    ws.mkdir()
    target = ws / "hello.py"
    target.write_text("print('hi')\n")
    try:
        before = _flags(target)
    except OSError as exc:
        need(False, f"this filesystem has no inode flags: {exc}")
    command = (
        'python3 -c \'import fcntl, struct; f = open("hello.py", "rb"); '
        'old = struct.unpack("l", fcntl.ioctl(f.fileno(), 0x80086601, bytes(8)))[0]; '
        'fcntl.ioctl(f.fileno(), 0x40086602, struct.pack("l", old | 0xC0)); '
        'print("flags set")\''
    )
    result = await bash_tool.run_shell(command, ws, 30, True, None, profile="plan", roots=[ws])
    after = _flags(target)
    assert result.data is not None and result.data["confinement"] == "plan sandbox"
    assert after == before, (
        f"a plan-mode command changed the inode flags of a workspace file under Landlock "
        f"({before:#x} -> {after:#x}): {result.content}"
    )
