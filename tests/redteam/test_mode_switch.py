"""'A switch to plan mode stops running side-effect calls' (docs/architecture.md, "Mode
switch while tools run"): `planLsp/setMode {mode: "plan"}` answers only after every running
side-effect call was stopped — a process-group kill plus every descendant found in /proc.

A build-mode command that daemonises (a new session, its parent gone) is in neither: it is
re-parented to init, so it keeps changing the workspace after the session is in plan mode.
The build profile (bubblewrap without a pid namespace) does not hold it either."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable
from pathlib import Path

from tests.e2e.scripts import sample_project
from tests.needs import need_program
from tests.redteam._repos import build_mode_server, one_call_script


async def _wait_for(predicate: Callable[[], bool], timeout: float) -> bool:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.05)
    return predicate()


async def test_switch_to_plan_mode_stops_a_daemonised_build_command(tmp_path: Path) -> None:
    """Attacker: in build mode (the user answers "Allow always"), the injected model runs a
    command that detaches a writer (`setsid -f sh -c 'while …; do echo >> notes.txt; …'`)
    and returns at once. The user then switches to plan mode.

    Should: when `planLsp/setMode` answers, nothing started by a build-mode call runs any
    more, and the workspace stops changing. Today: the writer keeps appending to the
    workspace for as long as it likes, in plan mode."""
    need_program("setsid", "the attack detaches with setsid (util-linux)")
    ws = sample_project(tmp_path / "ws")
    notes = ws / "notes.txt"
    pidfile = tmp_path / "daemon.pid"
    # Bounded (about 20 s) so a failing run leaves nothing behind for long.
    writer = (
        f"echo $$ > {pidfile}; i=0; while [ $i -lt 200 ]; do "
        f"echo tick >> {notes}; i=$((i+1)); sleep 0.1; done"
    )
    # The command returns once the writer has written (at most ~5 s): processes a command
    # leaves behind are stopped when it ends, so without this wait the writer may be gone
    # before its first line and the start could not be observed.
    command = (
        f"setsid -f sh -c '{writer}' </dev/null >/dev/null 2>&1; "
        f"i=0; until [ -s {notes} ] || [ $i -ge 100 ]; do sleep 0.05; i=$((i+1)); done; "
        "echo started"
    )
    script = one_call_script(tmp_path, "bash", command=command)
    args = ["--provider", "scripted", "--script", str(script)]
    try:
        async with build_mode_server(tmp_path, ws, args) as ed:
            assert (await ed.state())["mode"] == "build"
            await ed.request("planLsp/prompt", {"text": "set up the watcher"}, timeout=90)
            assert await _wait_for(notes.exists, 10), "the build-mode command did not start"
            answer = await ed.request("planLsp/setMode", {"mode": "plan"})
            assert answer["mode"] == "plan"
            size_at_switch = notes.stat().st_size
            grew = await _wait_for(lambda: notes.stat().st_size > size_at_switch, 3)
        assert not grew, (
            "a process started by a build-mode call kept writing to the workspace after "
            "planLsp/setMode {mode: plan} answered"
        )
    finally:
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(pidfile.read_text().strip()), signal.SIGKILL)
