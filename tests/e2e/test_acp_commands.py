"""Slash commands over ACP: announced in `available_commands_update`, each carried out by the
core (not sent to the model): /approve after the user kept planning, /steps, /revert, /usage,
/plans, /build, /plan, /compact, and a refusal in words."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import acp

from tests.e2e.test_acp import Client, _workspace, running_agent
from tests.turns import GREETING_EDIT, calls, plan_turns

TODOS = ["Change the greeting", "Run nothing else"]


def _todos(*statuses: str) -> dict[str, Any]:
    todos = [{"content": c, "status": s} for c, s in zip(TODOS, statuses, strict=True)]
    return {"tool_calls": [{"name": "todo_write", "arguments": {"todos": todos}}]}


class KeepPlanning(Client):
    def __init__(self) -> None:
        super().__init__()
        self.choose["switch_mode"] = "reject_once"


async def test_slash_commands_are_carried_out_by_the_core(tmp_path: Path) -> None:
    turns = [
        *plan_turns(),
        _todos("in_progress", "pending"),
        calls(GREETING_EDIT),
        _todos("completed", "completed"),
        {"text": "Done: the greeting is updated."},
        {"text": "A summary of the conversation."},
    ]
    ws, script = _workspace(tmp_path, turns)
    client = KeepPlanning()

    async def said(command: str) -> str:
        before = len(client.updates)
        answer = await conn.prompt(session_id=sid, prompt=[acp.text_block(command)])
        assert answer.stop_reason == "end_turn"
        return "".join(
            u.content.text for u in client.of("agent_message_chunk", before) if u.content.text
        )

    async with running_agent(script, client) as conn:
        await conn.initialize(protocol_version=1)
        sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        await said("Plan a friendlier greeting")
        (announced,) = client.of("available_commands_update")
        names = [c.name for c in announced.available_commands]
        assert names == [
            "plan", "build", "approve", "reject", "review", "compact", "usage", "plans", "revert",
            "steps", "retry",
        ]  # fmt: skip
        assert len(client.permissions) == 1  # the plan was asked about, and kept planning

        # /approve: the plan shown again, approved as shown, built (the edit asked about).
        text = await said("/approve")
        assert "print('hello, world')" in (ws / "hello.py").read_text()
        assert "1. Change the greeting in `hello.py`" in text
        assert [p.tool_call.kind for p in client.permissions] == ["switch_mode", "edit"]

        assert "1. [done] Change the greeting in `hello.py`" in await said("/steps")
        assert "Context:" in await said("/usage")
        assert "Plan: greet politely (done" in await said("/plans")

        text = await said("/revert 1")
        assert (ws / "hello.py").read_text() == "print('hi')\n", text
        assert "reverted" in text

        await said("/build")
        assert client.of("current_mode_update")[-1].current_mode_id == "build"
        await said("/plan")
        assert client.of("current_mode_update")[-1].current_mode_id == "plan"

        refused = await said("/revert seven")
        assert "/revert takes a checklist item's number" in refused
        assert "Compact" in await said("/compact")
