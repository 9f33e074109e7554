"""Through the real server process: the sandbox self-test proves that host Unix sockets and
FIFOs are out of reach, and the state says so (`shellProtection`); a bubblewrap whose
Landlock layer or seccomp filter is taken away (a wrapper on PATH strips them from the
command line) fails the self-test by name and the server falls back to `classified`."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from plan_lsp.policy.sandbox.selftest import PROOF
from tests.e2e.scripts import sample_project
from tests.lsp_harness import Editor, running_server
from tests.sandbox_support import require

# Stands in for bwrap: runs the real one without a part of the plan profile's command line.
STRIPPING_BWRAP = """#!{python}
import os, sys
argv = sys.argv[1:]
if {what!r} == "landlock" and "--filesystem-only" in argv:
    at = argv.index("--filesystem-only") - 4  # python -I -S launcher --filesystem-only ...
    end = argv.index("--", at + 5)
    del argv[at : end + 1]
if {what!r} == "seccomp" and "--seccomp" in argv:
    at = argv.index("--seccomp")
    del argv[at : at + 2]
os.execv({real!r}, [{real!r}, *argv])
"""


async def _settled_state(ed: Editor) -> dict[str, Any]:
    state = await ed.state()
    if state["planShell"] is None:
        update = await ed.wait_update(
            lambda u: u["kind"] == "state" and u["state"]["planShell"] is not None
        )
        state = update["state"]
    return state


@pytest.mark.parametrize("mechanism", ["bubblewrap", "landlock"])
async def test_the_state_reports_the_ipc_proof(mechanism: str, tmp_path: Path) -> None:
    require(mechanism)  # type: ignore[arg-type]
    ws = sample_project(tmp_path / "ws")
    async with running_server([ws], env={"PLAN_LSP_SANDBOX": mechanism}) as ed:
        state = await _settled_state(ed)
    assert state["planShell"] == "sandboxed" and state["sandbox"] == mechanism, state
    assert state["shellProtection"].startswith(f"sandboxed: {mechanism} (read-only")
    assert f"self-test: {PROOF}" in state["shellProtection"]
    assert "a Unix-socket connect and a FIFO write failed" in state["shellProtection"]


@pytest.mark.parametrize(
    ("what", "reached"),
    [("landlock", "a write to the FIFO"), ("seccomp", "a Unix-socket connect to")],
)
async def test_a_sandbox_without_a_guard_is_refused_by_name(
    what: str, reached: str, tmp_path: Path
) -> None:
    require("bubblewrap")
    real = shutil.which("bwrap")
    assert real is not None
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "bwrap"
    python = os.path.realpath(sys.executable)
    fake.write_text(STRIPPING_BWRAP.format(python=python, what=what, real=real))
    fake.chmod(0o755)
    ws = sample_project(tmp_path / "ws")
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "PLAN_LSP_SANDBOX": "bubblewrap"}
    async with running_server([ws], env=env) as ed:
        state = await _settled_state(ed)
    assert state["planShell"] == "classified" and state["sandbox"] is None, state
    text = state["shellProtection"]
    assert "no sandbox here (no working sandbox: bubblewrap: host IPC was reached: " in text
    assert reached in text, text
