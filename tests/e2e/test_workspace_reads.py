"""Every file the server reads from a workspace is read as a regular file, never through a
link and never blocking (policy/safe_fs.py): through the real server process, a repository
whose plan is a FIFO or a link cannot hang the server or show it another file."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.e2e.scripts import sample_project, scripted_args, write_script
from tests.lsp_harness import running_server


def _unblock(fifo: Path) -> None:
    """Open the FIFO for writing once, so a reader stuck on it (the old behaviour) ends."""
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass


async def test_a_fifo_as_the_plan_hangs_nothing(tmp_path: Path) -> None:
    """The repository ships `.plan-lsp/plans/PLAN.md` as a named pipe. Rejecting without
    feedback reads the plan for the user's comments; the file watcher reads it when it
    changes: neither may wait for a writer that never comes."""
    ws = sample_project(tmp_path / "ws")
    plans = ws / ".plan-lsp" / "plans"
    plans.mkdir(parents=True)
    plan = plans / "PLAN.md"
    os.mkfifo(plan)
    script = write_script(tmp_path / "script.json", [{"text": "hello"}])
    async with running_server([ws], *scripted_args(script)) as ed:
        try:
            with pytest.raises(JsonRpcException, match="cannot reject"):
                await ed.request("planLsp/rejectPlan", {}, timeout=10)
            plan.unlink()
            await _until_the_watcher_reports(ed, plan)
            # Now the pipe comes back: the watcher reads the plan again.
            start = len(ed.ed.updates)
            plan.unlink()
            os.mkfifo(plan)
            await ed.wait_update(_changed_on_disk(0), timeout=10, start=start)
            state = await asyncio.wait_for(ed.state(), 10)
        except TimeoutError:
            _unblock(plan)
            pytest.fail("the server blocked on a FIFO named like the plan")
        assert state["mode"] == "plan" and state["outcome"] == "planning_without_plan"


async def _until_the_watcher_reports(ed: Any, plan: Path) -> None:
    """The watcher starts a little after `initialized`: write a regular plan until it
    reports one written outside the editor (each write waited on, at most 20)."""
    for attempt in range(20):
        start = len(ed.ed.updates)
        plan.write_text(f"# Plan {attempt:02}\n")
        try:
            await ed.wait_update(_changed_on_disk(10), timeout=1, start=start)
            return
        except TimeoutError:
            continue
    pytest.fail("the plan watcher never reported a change")


def _changed_on_disk(chars: int) -> Callable[[dict[str, Any]], bool]:
    return lambda u: (
        u["kind"] == "planDraft"
        and u.get("status") == "changedOnDisk"
        and (u.get("chars") == chars)
    )


async def test_a_plan_linked_elsewhere_is_not_read_through(tmp_path: Path) -> None:
    """`.plan-lsp/plans/PLAN.md` is a link to a file outside the workspace: the server
    does not count it as a plan, and rejecting does not take the other file's text as
    feedback."""
    outside = tmp_path / "secret.md"
    outside.write_text("# Plan\n1. step\n> secret feedback\n")
    ws = sample_project(tmp_path / "ws")
    plans = ws / ".plan-lsp" / "plans"
    plans.mkdir(parents=True)
    (plans / "PLAN.md").symlink_to(outside)
    script = write_script(tmp_path / "script.json", [{"text": "hello"}])
    async with running_server([ws], *scripted_args(script)) as ed:
        state = await ed.state()
        assert state["outcome"] == "planning_without_plan", state
        with pytest.raises(JsonRpcException, match="cannot reject"):
            await ed.request("planLsp/rejectPlan", {}, timeout=10)
