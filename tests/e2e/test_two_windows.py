"""Two editor windows on one folder: two `plan-lsp serve` processes, each a session of its own
(the second does not take over the session the first has open). Both plan, each into its own
file; while window A's Do run is changing the folder, window B's approval (its Do run) and its
build-mode prompt are refused naming A's session and process, and B's plan stays submitted;
A's run finishes with nothing lost; B sees A's plan files, and once A is done B's own Do run
goes ahead."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.e2e.scripts import sample_project, scripted_args, write_script
from tests.lsp_harness import Editor, running_server
from tests.turns import GREETING_EDIT, calls, plan_turns

PLAN_A = (
    "# Plan: greet politely\n\n"
    "1. Change the greeting in `hello.py` from `hi` to `hello, world`.\n"
    "2. Wait for the go-ahead before finishing.\n"
)
PLAN_B = "# Plan: document the greeting\n\n1. Add a line about the greeting to `README.md`.\n"
# A's Do run edits hello.py, then holds the folder until the test creates `go` (a condition,
# not a pause).
HOLD = "while [ ! -e go ]; do sleep 0.05; done; echo released"
README_LINE = "The greeting is printed by `hello.py`.\n"


async def ended(window: Editor, timeout: float = 30) -> dict[str, Any]:
    """The window's state once its run has ended and its outcome is settled (looked at every
    50 ms, within `timeout`)."""

    async def wait() -> dict[str, Any]:
        while True:
            state: dict[str, Any] = await window.state()
            if not state["running"] and state["outcome"] != "planning_with_plan":
                return state
            await asyncio.sleep(0.05)

    try:
        return await asyncio.wait_for(wait(), timeout)
    except TimeoutError:
        raise AssertionError(f"the run did not end: {await window.state()}") from None


async def refused(window: Editor, method: str, params: dict[str, Any]) -> str:
    with pytest.raises(JsonRpcException) as caught:
        await window.request(method, params)
    return str(caught.value)


async def test_two_windows_plan_apart_and_change_the_folder_one_at_a_time(tmp_path: Path) -> None:
    ws = sample_project(tmp_path / "ws")
    a_turns = [
        *plan_turns(PLAN_A),
        calls(GREETING_EDIT),
        {"tool_calls": [{"name": "bash", "arguments": {"command": HOLD}}]},
        {"text": "Done: the greeting is polite."},
    ]
    readme = {"path": "README.md", "content": "# sample\n" + README_LINE}
    b_turns = [
        *plan_turns(PLAN_B),
        calls({"name": "write_file", "arguments": readme}),
        {"text": "Done: the README says where the greeting is."},
    ]
    a_args = scripted_args(write_script(tmp_path / "a.json", a_turns), tmp_path / "a.jsonl")
    b_args = scripted_args(write_script(tmp_path / "b.json", b_turns), tmp_path / "b.jsonl")
    plans = ws / ".plan-lsp" / "plans"
    async with running_server([ws], *a_args) as a:
        a_state = await a.settled_state()
        async with running_server([ws], *b_args) as b:
            b_state = await b.settled_state()
            # Two sessions: B did not restore the session A has open.
            assert a_state["sessionId"] != b_state["sessionId"]
            a_id = a_state["sessionId"]

            # Both plan; B's round does not write over A's submitted plan.
            assert (await a.request("planLsp/prompt", {"text": "greet"}))["stopReason"] == (
                "plan_submitted"
            )
            assert (await b.request("planLsp/prompt", {"text": "document"}))["stopReason"] == (
                "plan_submitted"
            )
            a_state, b_state = await a.state(), await b.state()
            assert a_state["planStatus"] == b_state["planStatus"] == "submitted"
            assert a_state["planUri"] != b_state["planUri"]
            assert (plans / "PLAN.md").read_text() == PLAN_A
            assert Path(b_state["planUri"].removeprefix("file://")).read_text() == PLAN_B

            # A's Do run changes the folder and holds it (its command waits for `go`).
            await a.request("planLsp/approvePlan", {"permissionMode": "yolo"})
            await a.wait_update(lambda u: u.get("kind") == "toolCall" and u["tool"] == "bash")
            assert (ws / "hello.py").read_text() == "print('hello, world')\n"
            assert (await a.state())["running"] is True

            # B's Do run and B's build-mode prompt are refused, naming A's session and process.
            said = await refused(b, "planLsp/approvePlan", {})
            assert f"session {a_id} (plan-lsp process " in said, said
            assert "is changing this folder; one run changes a folder at a time" in said
            assert (await b.state())["planStatus"] == "submitted"  # not approved in vain
            await b.request("planLsp/setMode", {"mode": "build"})
            said = await refused(b, "planLsp/prompt", {"text": "change the README"})
            assert f"session {a_id} (plan-lsp process " in said, said
            await b.request("planLsp/setMode", {"mode": "plan"})
            assert (ws / "README.md").read_text() == "# sample\n"

            # A's run goes on to its end; nothing of it is lost.
            (ws / "go").write_text("")
            await a.wait_update(lambda u: u.get("kind") == "done", timeout=30)
            a_after = await ended(a)
            assert a_after["outcome"] == "completed" and a_after["planStatus"] == "approved"
            assert a_after["approvedPlan"]["text"] == PLAN_A
            assert (ws / "hello.py").read_text() == "print('hello, world')\n"
            assert (plans / "PLAN.md").read_text() == PLAN_A

            # B sees A's plan files: A's approved plan, as A lists it, beside its own.
            listed = (await b.request("planLsp/plans", {}))["plans"]
            by_file = {Path(p["uri"]).name: p for p in listed}
            assert by_file["PLAN.md"]["sessionId"] == a_id
            assert by_file["PLAN.md"]["status"] == "approved", by_file
            a_listed = (await a.request("planLsp/plans", {}))["plans"]
            (in_a,) = [p for p in a_listed if p["uri"] == by_file["PLAN.md"]["uri"]]
            same = ("title", "status", "sessionId", "revisions", "approvedAt")
            assert {k: in_a[k] for k in same} == {k: by_file["PLAN.md"][k] for k in same}
            assert in_a["current"] and not by_file["PLAN.md"]["current"]
            assert by_file[Path(b_state["planUri"]).name]["status"] == "submitted"

            # The folder is free again: B's own Do run goes ahead.
            await b.request("planLsp/approvePlan", {"permissionMode": "auto_edit"})
            await b.wait_update(lambda u: u.get("kind") == "done", timeout=30)
            b_after = await ended(b)
            assert b_after["outcome"] == "completed"
            assert b_after["approvedPlan"]["text"] == PLAN_B
            assert (ws / "README.md").read_text() == "# sample\n" + README_LINE
            assert (ws / "hello.py").read_text() == "print('hello, world')\n"
