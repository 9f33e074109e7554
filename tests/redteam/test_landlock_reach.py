"""Landlock (docs/security.md §4) promises "the server out of reach": Landlock's ptrace and
signal scoping keep a plan-mode command from reading the server's environment or killing
it. But there is no pid namespace, and `prlimit(2)` on another process of the same user is
checked by uid only: Landlock does not mediate it (no `task_setrlimit` hook) and the seccomp
filter (`landlock_launch.SYSCALL_GROUPS`) does not deny it. A plan-mode command finds the
server by walking its own ancestors in /proc and lowers its limits: a CPU limit below what
the server has already used makes the kernel SIGKILL it; `RLIMIT_NOFILE`, `RLIMIT_FSIZE`
or `RLIMIT_AS` cripple it instead (no plan save, no state, no sockets). The same reaches
every process of the user: the editor, other servers."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.e2e.scripts import sample_project
from tests.lsp_harness import running_server
from tests.redteam._repos import one_call_script
from tests.sandbox_support import require

# Walks up from the command to the first ancestor whose argv is `python -m plan_lsp serve …`
# (this test's own server, never another one on the machine; matched on argv words, since the
# launchers' argv holds this very text) and sets its CPU limit to 1 second.
FIND_AND_LIMIT = (
    'p=$$; while [ "$p" -gt 1 ]; do '
    "p=$(awk '{print $4}' /proc/$p/stat); "
    "if [ \"$(tr '\\0' '\\n' </proc/$p/cmdline | sed -n '3p;4p' | tr '\\n' .)\" = "
    "plan_lsp.serve. ]; then break; fi; done; "
    "prlimit --pid $p --cpu=1:1 && echo limited $p"
)


async def test_a_plan_mode_command_under_landlock_kills_the_server_with_prlimit(
    tmp_path: Path,
) -> None:
    """Attacker: in plan mode under Landlock (`PLAN_LSP_SANDBOX=landlock`), the injected
    model runs a read-only looking command that walks /proc to the server and calls
    `prlimit --pid <server> --cpu=1:1`.

    Should: a plan-mode command cannot touch any process outside its sandbox (deny
    `prlimit64` for other pids in the seccomp filter, or `setrlimit` only, as bubblewrap's
    pid namespace gives). Today: the limit is set and the kernel kills the server with
    SIGKILL as soon as it runs again; the editor loses it mid-session."""
    require("landlock")
    ws = sample_project(tmp_path / "ws")
    script = one_call_script(tmp_path, "bash", command=FIND_AND_LIMIT)
    args = ["--provider", "scripted", "--script", str(script), "--plan-shell", "sandboxed"]
    async with running_server([ws], *args, env={"PLAN_LSP_SANDBOX": "landlock"}) as ed:
        # The sandbox self-test answers after the first state may be read (planShell null,
        # sandbox null): wait for the state the server pushes once it knows.
        state = await ed.settled_state()
        assert state["mode"] == "plan" and state.get("sandbox") == "landlock", state
        try:
            await ed.request("planLsp/prompt", {"text": "look around"}, timeout=60)
            alive = (await asyncio.wait_for(ed.state(), 10))["mode"] == "plan"
        except (TimeoutError, ConnectionError, RuntimeError) as exc:
            alive = False
            reason = repr(exc)
        else:
            reason = ""
        if alive:
            results = [u for u in ed.updates_of("toolResult") if u.get("tool") == "bash"]
            assert "limited" not in str(results), (
                "the command set the server's limits (it survived only by luck)"
            )
    if not alive:
        pytest.fail(f"a plan-mode command under Landlock killed the server: {reason}")
