"""Nothing a `bash` call starts outlives it: not a background job, not a daemon that left the
process group and the server's process tree (`setsid -f`, a double fork, `nohup … &
disown`, a program that daemonises itself), in every confinement a command can run in: no
sandbox (plan `classified`, build without bubblewrap: the subreaper launcher), Landlock (the
subreaper launcher), bubblewrap's plan and build profiles (a pid namespace each)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

import plan_lsp.tools.bash as bash_mod
from plan_lsp.policy.sandbox import SandboxStatus, probe_sandbox
from plan_lsp.tools.base import ToolResult
from plan_lsp.tools.bash import run_shell
from tests.e2e.scripts import sample_project, scripted_args
from tests.redteam._repos import build_mode_server, one_call_script
from tests.sandbox_support import marked_processes, require

Run = Callable[[str, Path, asyncio.Event | None], Awaitable[ToolResult]]

# Each prints "ready" from the escaped process itself, so the command (`… | head -1`) ends only
# once the escape happened; TOKEN is in the escaped process's command line.
ESCAPES = {
    "setsid -f": "setsid -f sh -c 'echo ready; sleep 60; : TOKEN' </dev/null 2>/dev/null",
    "double fork": "(sh -c 'echo ready; sleep 60; : TOKEN' </dev/null 2>/dev/null &)",
    "nohup and disown": "{ nohup sh -c 'echo ready; sleep 60; : TOKEN' </dev/null 2>/dev/null & "
    "disown; }",
    "self-daemonising program": (
        "python3 -c 'import os, sys, time\n"
        "if os.fork(): sys.exit(0)\n"
        "os.setsid()\n"
        "if os.fork(): sys.exit(0)\n"
        'print("ready", flush=True); time.sleep(60)\' TOKEN </dev/null 2>/dev/null'
    ),
}
CONFINEMENTS = ["plan, no sandbox", "build, no sandbox", "landlock", "bubblewrap plan",
                "bubblewrap build"]  # fmt: skip


async def _gone(token: str, timeout: float = 5.0) -> list[int]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while (left := marked_processes(token)) and loop.time() < deadline:
        await asyncio.sleep(0.05)
    return left


@pytest.fixture(params=CONFINEMENTS)
def run(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Run:
    variant: str = request.param
    sandboxed, profile = False, "build" if "build" in variant else "plan"
    if variant.endswith("no sandbox"):
        status = SandboxStatus(None, "none for this test")
    else:
        mechanism = "landlock" if variant == "landlock" else "bubblewrap"
        require(mechanism)  # type: ignore[arg-type]
        status = probe_sandbox([mechanism])  # type: ignore[list-item]
        if profile == "build" and not status.build_profile:
            pytest.fail(f"the build profile does not work here: {status.detail}")
        sandboxed = profile == "plan"
    monkeypatch.setattr(bash_mod, "sandbox_status", lambda: status)

    async def run_it(command: str, cwd: Path, cancel: asyncio.Event | None) -> ToolResult:
        return await run_shell(command, cwd, 30, sandboxed, cancel, profile=profile)  # type: ignore[arg-type]

    return run_it


@pytest.mark.parametrize("escape", sorted(ESCAPES))
async def test_an_escaped_process_ends_with_the_command(
    escape: str, run: Run, tmp_path: Path
) -> None:
    token = f"plan-lsp-escape-{uuid.uuid4().hex}"
    command = f"{ESCAPES[escape].replace('TOKEN', token)} | head -1; echo done"
    try:
        result = await run(command, tmp_path, None)
        assert result.data is not None, result.content
        assert result.data["stdout"].split() == ["ready", "done"], result.content
        assert await _gone(token) == []
    finally:
        _kill(token)


@pytest.mark.parametrize("escape", ["setsid -f", "double fork"])
async def test_a_stopped_command_takes_its_escaped_processes(
    escape: str, run: Run, tmp_path: Path
) -> None:
    """The call's cancel signal (a switch to plan mode, the user) while the command still
    runs: what it started escapes nowhere either."""
    token = f"plan-lsp-escape-{uuid.uuid4().hex}"
    command = f"{ESCAPES[escape].replace('TOKEN', token)} | head -1; sleep 60"
    cancel = asyncio.Event()
    try:
        call = asyncio.ensure_future(run(command, tmp_path, cancel))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 20
        while not marked_processes(token) and loop.time() < deadline:
            await asyncio.sleep(0.05)
        assert marked_processes(token), "the escape did not start"
        cancel.set()
        result = await asyncio.wait_for(call, 20)
        assert result.data is not None and result.data["error"] == "cancelled"
        assert await _gone(token) == []
    finally:
        _kill(token)


def test_control_the_escapes_outlive_a_plain_bash(tmp_path: Path) -> None:
    """Without the launcher, the escapes that leave the session outlive `bash -c` and a kill
    of its process group (the others are in the group)."""
    for escape in ("setsid -f", "self-daemonising program"):
        text = ESCAPES[escape]
        token = f"plan-lsp-escape-{uuid.uuid4().hex}"
        try:
            proc = subprocess.Popen(
                ["bash", "-c", f"{text.replace('TOKEN', token)} | head -1"],
                cwd=tmp_path, stdout=subprocess.PIPE, start_new_session=True,
            )  # fmt: skip
            proc.communicate(timeout=20)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            assert marked_processes(token), escape
        finally:
            _kill(token)


async def test_exit_codes_and_signals_come_through(run: Run, tmp_path: Path) -> None:
    exited = await run("exit 3", tmp_path, None)
    assert exited.data is not None and exited.data["exit_code"] == 3
    killed = await run("kill -TERM $$", tmp_path, None)
    assert killed.data is not None and killed.data["exit_code"] in (-15, 143)
    # Python (the launchers) ignores SIGPIPE; the command must get it back: `yes | head`
    # ends `yes` by the signal (141), without "Broken pipe" on stderr.
    piped = await run('yes | head -c 4 >/dev/null; echo "${PIPESTATUS[0]}"', tmp_path, None)
    assert piped.data is not None and piped.data["stdout"].strip() == "141", piped.content
    assert piped.data["stderr"] == ""


def _kill(token: str) -> None:
    for pid in marked_processes(token):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("sandbox", ["none", "landlock", "bubblewrap"])
async def test_through_the_server_a_build_mode_daemon_stops_with_its_call(
    sandbox: str, tmp_path: Path
) -> None:
    """The red-team attack (tests/redteam/test_mode_switch.py) with every mechanism the
    server may end up with: the writer a build-mode call detached stops writing when the
    call ends, so nothing changes once `planLsp/setMode {mode: plan}` has answered."""
    if sandbox != "none":
        require(sandbox)  # type: ignore[arg-type]
    ws = sample_project(tmp_path / "ws")
    notes = ws / "notes.txt"
    writer = f"while :; do echo tick >> {notes}; sleep 0.05; done"
    command = (
        f"setsid -f sh -c '{writer}' </dev/null >/dev/null 2>&1; "
        f"until [ -s {notes} ]; do sleep 0.05; done; echo started"
    )
    script = one_call_script(tmp_path, "bash", command=command)
    env = {"PLAN_LSP_SANDBOX": sandbox}
    try:
        async with build_mode_server(tmp_path, ws, scripted_args(script), env) as ed:
            await ed.request("planLsp/prompt", {"text": "start the watcher"}, timeout=90)
            results = [u for u in ed.updates_of("toolResult") if u.get("tool") == "bash"]
            assert results and "started" in str(results[0]), results
            size = notes.stat().st_size
            assert (await ed.request("planLsp/setMode", {"mode": "plan"}))["mode"] == "plan"
            assert await _gone(writer) == []
            assert notes.stat().st_size == size
    finally:
        _kill(writer)
