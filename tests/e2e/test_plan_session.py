"""plan → submit → approve → Do → done through the real server, scripted provider."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.scripts import (
    PLAN_TEXT,
    plan_then_do_turns,
    sample_project,
    scripted_args,
    write_script,
)
from tests.lsp_harness import running_server

SIDE_EFFECT_TOOLS = {"write_file", "edit_file", "enter_plan_mode"}


async def test_plan_approve_do_through_the_server(tmp_path: Path) -> None:
    ws = sample_project(tmp_path / "ws")
    script = write_script(tmp_path / "script.json", plan_then_do_turns())
    transcript = tmp_path / "transcript.jsonl"
    async with running_server([ws], *scripted_args(script, transcript)) as ed:
        result = await ed.request("planLsp/prompt", {"text": "Make the greeting polite"})
        assert result["stopReason"] == "plan_submitted"
        state = await ed.state()
        assert state["planStatus"] == "submitted" and state["mode"] == "plan"
        plan = ws / ".plan-lsp" / "plans" / "PLAN.md"
        assert plan.read_text() == PLAN_TEXT
        # the write attempt and the destructive shell command were blocked, and did nothing
        blocked = {u["tool"]: u for u in ed.updates_of("blocked")}
        assert {"write_file", "bash"} <= set(blocked)
        assert "plan mode" in blocked["write_file"]["reason"]
        assert (ws / "hello.py").read_text() == "print('hi')\n"

        state = await ed.command("planLsp.approvePlan", {"permissionMode": "auto_edit"})
        assert state["mode"] == "build" and state["planStatus"] == "approved"
        assert state["approvedPlan"]["text"] == PLAN_TEXT
        done = await ed.wait_update(lambda u: u["kind"] == "done" and u["runId"] != result["runId"])
        assert done["stopReason"] == "end_turn"
        assert (ws / "hello.py").read_text() == "print('hello, world')\n"
        assert (await ed.state())["outcome"] == "completed"

    requests = [json.loads(line) for line in transcript.read_text().splitlines()]
    plan_requests = [r for r in requests if r["mode"] == "plan"]
    assert len(plan_requests) == 4
    for r in plan_requests:
        assert not SIDE_EFFECT_TOOLS & set(r["tools"]), r["tools"]
        assert "plan_write" in r["tools"] and "exit_plan_mode" in r["tools"]
    do_requests = [r for r in requests if r["mode"] == "build"]
    assert do_requests, "the Do run made model requests"
    first_do = do_requests[0]
    assert "edit_file" in first_do["tools"]
    contents = "\n".join(m["content"] for m in first_do["messages"])
    assert PLAN_TEXT in contents and "Make the greeting polite" in contents
    # the approval reached the model as structured context, marked ephemeral
    notes = [m for m in first_do["messages"] if m.get("meta", {}).get("kind") == "session_context"]
    assert notes and notes[0]["meta"]["ephemeral"] is True
    assert any(e["kind"] == "plan_approved" for e in notes[0]["meta"]["events"])
