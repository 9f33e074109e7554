"""Process lifetime (docs/security.md §9): nothing a `bash` call starts may outlive it.

Both the server's kill (`tools/bash_process._kill_tree`) and the subreaper launcher
(`policy/sandbox/subreaper.sweep`) find what a command left behind through
`subreaper.descendants`, which drops every process whose `/proc/<pid>/stat` state is `Z`.
A process whose *main thread* has ended (`syscall(SYS_exit)`, not `exit_group`) while
another thread keeps running shows exactly that state (`ps`: `Zsl … <defunct>`): it is a
living process, yet it is invisible to both sweeps, and so are all its children. When the
launcher exits, the kernel hands it to init and it keeps running."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import pytest

from tests.e2e.scripts import sample_project, scripted_args
from tests.redteam._repos import build_mode_server, one_call_script
from tests.redteam.test_mode_switch import _wait_for
from tests.sandbox_support import require

# A process that leaves the session, starts a writer thread, then ends its main thread only.
# The writer is bounded (~20 s) so a failing run leaves nothing behind for long; its pid is
# written to PIDFILE so the test can clean up.
ZOMBIE_LEADER = r"""
import ctypes, os, platform, sys, threading, time
notes, pidfile = sys.argv[1], sys.argv[2]
os.setsid()
open(pidfile, "w").write(str(os.getpid()))
def write():
    for _ in range(200):
        with open(notes, "a") as f:
            f.write("tick\n")
        time.sleep(0.1)
    os._exit(0)
threading.Thread(target=write).start()
time.sleep(0.3)
SYS_EXIT = {"x86_64": 60, "aarch64": 93}[platform.machine()]
ctypes.CDLL(None).syscall(SYS_EXIT, 0)  # exit(2): this thread only, not the process
"""


async def _outlives_build_call(sandbox: str, tmp_path: Path, start: str, finish: str = "") -> bool:
    """A build-mode session ("Allow always") whose one `bash` call runs `start`, which must
    leave a writer appending to `notes.txt` (its pid in `writer.pid`), then `finish`; then a
    switch to plan mode. True when the workspace still grew after `planLsp/setMode`
    answered."""
    if sandbox != "none":
        require(sandbox)  # type: ignore[arg-type]
    ws = sample_project(tmp_path / "ws")
    notes, pidfile = ws / "notes.txt", tmp_path / "writer.pid"
    command = (
        start.format(notes=notes, pidfile=pidfile, tmp=tmp_path)
        + f"\ni=0; until [ -s {notes} ] || [ $i -ge 100 ]; do sleep 0.05; i=$((i+1)); done; "
        "sleep 0.5; echo started\n" + finish
    )
    script = one_call_script(tmp_path, "bash", command=command)
    env = {"PLAN_LSP_SANDBOX": sandbox}
    try:
        async with build_mode_server(tmp_path, ws, scripted_args(script), env) as ed:
            await ed.request("planLsp/prompt", {"text": "start the watcher"}, timeout=90)
            results = [u for u in ed.updates_of("toolResult") if u.get("tool") == "bash"]
            assert results and "started" in str(results[0]), results
            assert (await ed.request("planLsp/setMode", {"mode": "plan"}))["mode"] == "plan"
            size = notes.stat().st_size
            return await _wait_for(lambda: notes.stat().st_size > size, 3)
    finally:
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(pidfile.read_text()), signal.SIGKILL)


@pytest.mark.parametrize("sandbox", ["none", "landlock"])
async def test_a_process_whose_main_thread_ended_outlives_its_build_call(
    sandbox: str, tmp_path: Path
) -> None:
    """Attacker: in build mode ("Allow always"; bubblewrap unavailable, so the command runs
    under the subreaper launcher), the injected model starts a Python program that calls
    `setsid()`, starts a thread appending to `notes.txt` in the workspace, and then ends its
    main thread with the raw `exit` syscall. The command returns; the user switches to plan
    mode.

    Should: the process is killed when the call ends (the launcher is its subreaper), and
    nothing changes in the workspace once `planLsp/setMode {mode: plan}` has answered.
    Today: `descendants()` skips it because its stat state is `Z`, the launcher exits, the
    process is re-parented to init, and the workspace keeps growing in plan mode."""
    program = tmp_path / "leader.py"
    program.write_text(ZOMBIE_LEADER)
    start = f"python3 {program} {{notes}} {{pidfile}} </dev/null >/dev/null 2>&1 &"
    assert not await _outlives_build_call(sandbox, tmp_path, start), (
        "a process whose main thread had ended outlived its build-mode call and kept "
        "writing to the workspace after planLsp/setMode {mode: plan} answered"
    )


# Known limit (docs/security.md §9): without bubblewrap a build-mode command runs with the
# user's rights and can disarm the launcher that would stop what it leaves. Strict: once it
# is closed, these fail until the mark is removed.
UNCONFINED_BUILD_LIMIT = pytest.mark.xfail(
    strict=True,
    reason="docs/security.md §9: an unconfined build-mode command can blind or kill its "
    "launcher (bubblewrap's build profile closes this)",
)


@UNCONFINED_BUILD_LIMIT
@pytest.mark.parametrize("sandbox", ["none", "landlock"])
async def test_a_command_that_blinds_its_launcher_outlives_its_build_call(
    sandbox: str, tmp_path: Path
) -> None:
    """Attacker: in build mode (as above), the command first lowers its own launcher's
    open-file limit, `prlimit --pid $PPID --nofile=0:0` (the launcher is the shell's parent
    and runs as the same user), then detaches a writer with `setsid -f`.

    Should: the launcher still finds and kills the writer when the command ends. Today:
    `subreaper.descendants()` cannot open /proc any more, takes the `OSError` for "nothing
    left", the launcher exits, and the writer keeps appending in plan mode."""
    writer = (
        "echo $$ > {pidfile}; i=0; while [ $i -lt 200 ]; do echo tick >> {notes}; "
        "i=$((i+1)); sleep 0.1; done"
    )
    start = (
        f"prlimit --pid $PPID --nofile=0:0 && setsid -f sh -c '{writer}' </dev/null >/dev/null 2>&1"
    )
    assert not await _outlives_build_call(sandbox, tmp_path, start), (
        "a writer detached after the command blinded its launcher kept writing to the "
        "workspace after planLsp/setMode {mode: plan} answered"
    )


WRITER = (
    "echo $$ > {pidfile}; i=0; while [ $i -lt 200 ]; do echo tick >> {notes}; "
    "i=$((i+1)); sleep 0.1; done"
)


@UNCONFINED_BUILD_LIMIT
@pytest.mark.parametrize("sandbox", ["none", "landlock"])
async def test_a_command_that_kills_its_launcher_leaves_its_writer_running(
    sandbox: str, tmp_path: Path
) -> None:
    """Attacker: in build mode (as above), the command detaches a writer with `setsid -f`
    and, last, kills its own launcher: `kill -9 $PPID` (same user, its parent).

    Should: what a command started is stopped with it however the launcher ends (the server
    itself is no subreaper, so orphans of a dead launcher go to init). Today: the launcher
    dies before it can sweep, the writer is re-parented to init, the server's kill looks
    below a launcher that no longer exists and kills the process group the writer left, and
    the writer keeps appending in plan mode."""
    start = f"setsid -f sh -c '{WRITER}' </dev/null >/dev/null 2>&1"
    assert not await _outlives_build_call(sandbox, tmp_path, start, finish="kill -9 $PPID"), (
        "a writer detached by a command that then killed its launcher kept writing to the "
        "workspace after planLsp/setMode {mode: plan} answered"
    )
