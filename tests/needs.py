"""Tests that need a tool this machine may lack: they skip on a developer's machine, but FAIL
under CI (`CI=true`), which installs everything (`scripts/test-tools.sh`, which
`scripts/test.sh` runs) — so a green CI run never hides a test that did not run."""

from __future__ import annotations

import os
import shutil

import pytest


def need(ok: bool, reason: str) -> None:
    if ok:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI installs it: scripts/test-tools.sh)")
    pytest.skip(reason)


def need_program(name: str, why: str = "") -> str:
    found = shutil.which(name)
    need(found is not None, f"{name} is not installed{': ' + why if why else ''}")
    assert found is not None
    return found


def process_alive(pid: int) -> bool:
    """Whether `pid` still runs (a zombie is dead for our purposes: it can do nothing)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
