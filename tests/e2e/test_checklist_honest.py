"""The plan's checklist marks only what happened, through the real server: in a Do run
where the user denies the edit of one step and allows the other, and the model marks both
steps completed, PLAN.md ticks only the allowed step, and the model is told why the other
is not done."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.e2e.scripts import requests_of, scripted_session

PLAN = (
    "# Plan: greet and document\n\n"
    "1. Change the greeting in `hello.py`.\n"
    "2. Describe the greeting in `README.md`.\n"
)
STEPS = ("Change the greeting in hello.py", "Describe the greeting in README.md")


def todos(*statuses: str) -> dict[str, Any]:
    items = [{"content": c, "status": s} for c, s in zip(STEPS, statuses, strict=True)]
    return {"name": "todo_write", "arguments": {"todos": items}}


def edit(path: str, old: str, new: str) -> dict[str, Any]:
    return {"name": "edit_file", "arguments": {"path": path, "old_text": old, "new_text": new}}


TURNS: list[dict[str, Any]] = [
    {"tool_calls": [{"name": "plan_write", "arguments": {"content": PLAN}}]},
    {"tool_calls": [{"name": "exit_plan_mode", "arguments": {}}]},
    # Do run: the first edit is denied, the second allowed; the model claims both done.
    {"tool_calls": [todos("in_progress", "pending")]},
    {"tool_calls": [edit("hello.py", "print('hi')", "print('hello, world')")]},
    {"tool_calls": [todos("completed", "in_progress")]},
    {"tool_calls": [edit("README.md", "# sample", "# sample: says hello, world")]},
    {"tool_calls": [todos("completed", "completed")]},
    {"text": "Done."},
]


async def test_a_denied_edit_leaves_its_step_unticked(tmp_path: Path) -> None:
    ws, transcript, cm = scripted_session(tmp_path, TURNS, permission_requests=True)
    plan = ws / ".plan-lsp" / "plans" / "PLAN.md"
    async with cm as ed:
        ed.ed.answer_permission = lambda p: (
            "reject_once" if "hello.py" in json.dumps(p) else "allow_once"
        )
        result = await ed.request("planLsp/prompt", {"text": "greet and document"})
        assert result["stopReason"] == "plan_submitted"
        await ed.command("planLsp.approvePlan", {"permissionMode": "ask"})
        done = await ed.wait_update(lambda u: u["kind"] == "done" and u["stopReason"] == "end_turn")
        assert [p["tool"] for p in ed.ed.permission_requests] == ["edit_file", "edit_file"]
        assert (ws / "hello.py").read_text() == "print('hi')\n"  # denied
        assert "hello, world" in (ws / "README.md").read_text()  # allowed
        expected = (
            "# Plan: greet and document\n\n"
            "1. [ ] Change the greeting in `hello.py`.\n"
            "2. [x] Describe the greeting in `README.md`.\n"
        )
        assert ed.buffer_text(plan) == expected
        assert plan.read_text() == expected
        state = await ed.state()
        assert [(t["content"], t["status"]) for t in state["todos"]] == [
            (STEPS[0], "pending"),
            (STEPS[1], "completed"),
        ]
        assert done["touched"] == ["README.md"]
    # The model read why, in the observation of its todo_write.
    last = requests_of(transcript)[-1]["messages"][-1]
    assert last["role"] == "tool"
    assert "step 1 not marked done: the edit of hello.py was denied" in last["content"]
