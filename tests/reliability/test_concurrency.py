"""Concurrency: a switch to plan mode that arrives while a build-mode write waits for the
user's permission refuses the write at execution; two workspaces in one server, and two
server processes on two workspaces, keep separate state while runs stream."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from plan_lsp.session.state_home import state_root, workspace_key
from tests.e2e.scripts import sample_project, scripted_args, write_script
from tests.lsp_harness import Editor, running_server

TIMEOUT_S = 30.0


def _server(ws: list[Path], script: Path, **kw: Any):  # type: ignore[no-untyped-def]
    return running_server(ws, *scripted_args(script), **kw)


def _events(ws: Path) -> list[tuple[str, str, dict[str, Any]]]:
    db = state_root() / workspace_key(ws) / "state.db"
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT session_id, kind, data FROM events ORDER BY seq").fetchall()
    finally:
        con.close()
    return [(str(r[0]), str(r[1]), json.loads(r[2])) for r in rows]


# -- a toggle while a permission prompt is open ------------------------------------------------

WRITES = {
    "write_file": {"path": "late.txt", "content": "written after the toggle"},
    "edit_file": {"path": "hello.py", "old_text": "print('hi')", "new_text": "print('late')"},
    "bash": {"command": "echo late > late.txt"},
}


@pytest.mark.parametrize(
    ("tool", "toggle"),
    [
        ("write_file", "planLsp/setMode"),
        ("edit_file", "planLsp/toggleMode"),
        ("bash", "planLsp.toggleMode"),
    ],
)
async def test_toggle_to_plan_while_permission_is_pending_refuses_the_write(
    tmp_path: Path, tool: str, toggle: str
) -> None:
    ws = sample_project(tmp_path / "ws")
    script = write_script(
        tmp_path / "script.json",
        [{"tool_calls": [{"name": tool, "arguments": WRITES[tool]}]}, {"text": "ok"}],
    )
    async with _server([ws], script, permission_requests=True) as ed:
        await ed.request("planLsp/setMode", {"mode": "build"})
        asked = asyncio.Event()
        toggled = asyncio.Event()
        seen: list[dict[str, Any]] = []

        async def answer_after_toggle(*args: Any) -> dict[str, Any]:
            seen.append(args[-1])
            asked.set()
            await toggled.wait()  # the user said yes only after switching to plan mode
            return {"optionId": "allow_once"}

        ed.client.protocol.fm.features["planLsp/requestPermission"] = answer_after_toggle

        async def user_toggles() -> dict[str, Any]:
            await asyncio.wait_for(asked.wait(), TIMEOUT_S)
            if toggle == "planLsp/setMode":
                state: dict[str, Any] = await ed.request(toggle, {"mode": "plan"})
            elif toggle == "planLsp/toggleMode":
                state = await ed.request(toggle, {})
            else:
                state = await ed.command(toggle)
            toggled.set()
            return state

        toggler = asyncio.ensure_future(user_toggles())
        result = await ed.request("planLsp/prompt", {"text": "write it"}, timeout=TIMEOUT_S)
        toggled_state = await toggler
        assert toggled_state["mode"] == "plan"
        assert result["stopReason"] == "end_turn"
        assert len(seen) == 1, "the write asked once, in build mode"
        # The write did not run: nothing on disk changed.
        assert not (ws / "late.txt").exists()
        assert (ws / "hello.py").read_text() == "print('hi')\n"
        blocked = ed.updates_of("blocked")
        assert [(b["tool"], b["error"]) for b in blocked] == [(tool, "tool_not_allowed")]
        results = [u for u in ed.updates_of("toolResult") if u["tool"] == tool]
        assert results and results[0]["isError"] and "tool_not_allowed" in results[0]["content"]
        assert (await ed.state())["mode"] == "plan"
    kinds = [k for _s, k, _d in _events(ws)]
    assert kinds.index("mode_changed", kinds.index("run_started")) < kinds.index("run_finished")


# -- two workspaces in one server --------------------------------------------------------------

SLOW_TEXT = {"delay_ms": 15, "text": "streaming slowly " * 12}


async def _running_in(ed: Editor, ws: Path) -> dict[str, Any]:
    """Wait until the run in `ws` streams, then return that workspace's state."""
    uri = ws.resolve().as_uri()
    await ed.wait_update(lambda u: u["kind"] == "text" and u.get("workspaceUri") == uri, TIMEOUT_S)
    state: dict[str, Any] = await ed.request("planLsp/state", {"workspaceUri": ws.as_uri()})
    return state


async def test_two_workspaces_in_one_server_keep_separate_state_while_runs_stream(
    tmp_path: Path,
) -> None:
    a, b = sample_project(tmp_path / "a"), sample_project(tmp_path / "b")
    script = write_script(tmp_path / "script.json", [SLOW_TEXT, SLOW_TEXT], chunk=4)
    async with _server([a, b], script) as ed:
        await ed.request("planLsp/setMode", {"mode": "build", "workspaceUri": b.as_uri()})
        run_a = asyncio.ensure_future(
            ed.request("planLsp/prompt", {"text": "in a", "workspaceUri": a.as_uri()})
        )
        state_a = await _running_in(ed, a)
        run_b = asyncio.ensure_future(
            ed.request("planLsp/prompt", {"text": "in b", "workspaceUri": b.as_uri()})
        )
        state_b = await _running_in(ed, b)
        assert state_a["running"] and state_b["running"]
        assert state_a["sessionId"] != state_b["sessionId"]
        # Both stream at once; changing one workspace leaves the other as it was.
        await ed.request("planLsp/setPermissionMode", {"permissionMode": "strict"})
        now_a = await ed.request("planLsp/state", {"workspaceUri": a.as_uri()})
        now_b = await ed.request("planLsp/state", {"workspaceUri": b.as_uri()})
        assert (now_a["mode"], now_a["permissionMode"]) == ("plan", "strict")
        assert (now_b["mode"], now_b["permissionMode"]) == ("build", "ask")
        assert now_a["running"] and now_b["running"]
        # Cancelling a's run does not touch b's.
        await ed.request("planLsp/cancel", {"workspaceUri": a.as_uri()})
        assert (await run_a)["stopReason"] == "cancelled"
        assert (await ed.request("planLsp/state", {"workspaceUri": b.as_uri()}))["running"]
        result_b = await asyncio.wait_for(run_b, TIMEOUT_S)
        assert result_b["stopReason"] == "end_turn"
        result_a = run_a.result()
    # Every update names its workspace, and each run's updates stay in its own.
    by_run: dict[str, set[str]] = {}
    for upd in ed.ed.updates:
        if upd.get("runId"):
            by_run.setdefault(upd["runId"], set()).add(upd.get("workspaceUri", ""))
    assert by_run[result_a["runId"]] == {a.resolve().as_uri()}
    assert by_run[result_b["runId"]] == {b.resolve().as_uri()}
    # Each workspace's log holds only its own session and its own changes.
    events_a, events_b = _events(a), _events(b)
    assert {s for s, _k, _d in events_a} == {state_a["sessionId"]}
    assert {s for s, _k, _d in events_b} == {state_b["sessionId"]}
    assert "permission_mode_changed" in [k for _s, k, _d in events_a]
    assert "permission_mode_changed" not in [k for _s, k, _d in events_b]


# -- two server processes on two workspaces ----------------------------------------------------


def _plan_turns(title: str) -> list[dict[str, Any]]:
    plan = f"# Plan for {title}\n\n1. Change `hello.py` in {title} only.\n" + "detail\n" * 40
    return [
        {"delay_ms": 5, "tool_calls": [{"name": "plan_write", "arguments": {"content": plan}}]},
        {"tool_calls": [{"name": "exit_plan_mode", "arguments": {}}]},
    ]


async def test_two_server_processes_on_two_workspaces_keep_separate_state(tmp_path: Path) -> None:
    a, b = sample_project(tmp_path / "a"), sample_project(tmp_path / "b")
    script_a = write_script(tmp_path / "a.json", _plan_turns("a"))
    script_b = write_script(tmp_path / "b.json", [SLOW_TEXT], chunk=4)
    async with _server([a], script_a) as ed_a, _server([b], script_b) as ed_b:
        await ed_b.request("planLsp/setMode", {"mode": "build"})
        run_b = asyncio.ensure_future(ed_b.request("planLsp/prompt", {"text": "talk"}))
        await _running_in(ed_b, b)
        run_a = asyncio.ensure_future(ed_a.request("planLsp/prompt", {"text": "plan"}))
        # While both run: each process reports only its own workspace.
        await ed_a.wait_update(lambda u: u["kind"] == "planDraft", TIMEOUT_S)
        sa, sb = await ed_a.state(), await ed_b.state()
        assert sa["sessionId"] != sb["sessionId"]
        assert (sa["mode"], sb["mode"]) == ("plan", "build")
        assert sa["running"] and sb["running"]
        assert (await asyncio.wait_for(run_a, TIMEOUT_S))["stopReason"] == "plan_submitted"
        assert (await asyncio.wait_for(run_b, TIMEOUT_S))["stopReason"] == "end_turn"
        sa, sb = await ed_a.state(), await ed_b.state()
        assert (sa["planStatus"], sb["planStatus"]) == ("submitted", "none")
        assert sb["mode"] == "build"
        # Approving in a changes nothing in b.
        await ed_a.command("planLsp.approvePlan", {"execute": False})
        assert (await ed_a.state())["planStatus"] == "approved"
        assert (await ed_b.state())["planStatus"] == "none"
    assert (a / ".plan-lsp" / "plans" / "PLAN.md").read_text().startswith("# Plan for a")
    assert not (b / ".plan-lsp" / "plans" / "PLAN.md").exists()
    assert not any(u.get("workspaceUri") == b.resolve().as_uri() for u in ed_a.ed.updates)
    assert not any(u.get("workspaceUri") == a.resolve().as_uri() for u in ed_b.ed.updates)
