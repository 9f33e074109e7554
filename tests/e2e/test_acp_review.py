"""`/review` over ACP, through the real `plan-lsp acp` process: the plan's second reader (the
one the LSP server's *Review the plan* runs) reads the submitted plan with read-only tools and
its findings come into the conversation as a message, each with its plan line quoted. Its
write, its shell command and its mode switch are refused; the mode, the plan's status, the
plan file and the workspace stay as they were, and nobody is asked anything."""

from __future__ import annotations

import json
from pathlib import Path

import acp

from tests.e2e.scripts import requests_of
from tests.e2e.test_acp import _workspace, running_agent
from tests.e2e.test_acp_commands import KeepPlanning
from tests.turns import PLAN_TEXT, plan_turns

REVIEWER = [
    {"tool_calls": [{"name": "write_file", "arguments": {"path": "hello.py", "content": ""}}]},
    {"tool_calls": [{"name": "bash", "arguments": {"command": "touch pwned"}}]},
    {"tool_calls": [{"name": "exit_plan_mode", "arguments": {}}]},
    {"text": "L3: hello.py prints hi; say which line changes.\nL4: name the check to run."},
]


async def test_review_shows_the_second_readers_findings_and_changes_nothing(
    tmp_path: Path,
) -> None:
    ws, script = _workspace(tmp_path, [*plan_turns(), *REVIEWER])
    transcript = tmp_path / "t.jsonl"
    client = KeepPlanning()

    async def said(command: str) -> str:
        before = len(client.updates)
        answer = await conn.prompt(session_id=sid, prompt=[acp.text_block(command)])
        assert answer.stop_reason == "end_turn"
        return "".join(
            u.content.text for u in client.of("agent_message_chunk", before) if u.content.text
        )

    async with running_agent(script, client, transcript) as conn:
        await conn.initialize(protocol_version=1)
        sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        assert "there is no plan to review yet" in await said("/review")
        assert not transcript.exists() or requests_of(transcript) == []

        await said("Plan a friendlier greeting")
        (announced,) = client.of("available_commands_update")
        review = next(c for c in announced.available_commands if c.name == "review")
        assert "second reader" in review.description
        plan_file = next((ws / ".plan-lsp" / "plans").glob("*.md"))
        before = await conn.ext_method("planLsp/state", {"sessionId": sid})
        asked = len(client.permissions)
        mode_updates = len(client.of("current_mode_update"))

        text = await said("/review")
        lines = PLAN_TEXT.splitlines()
        assert "Review of the plan (2 findings):" in text, text
        assert f"- Line 3: hello.py prints hi; say which line changes.\n  > {lines[2]}" in text
        assert f"- Line 4: name the check to run.\n  > {lines[3]}" in text
        # the reviewer's own answer came first (streamed), the findings with their lines last
        assert text.index("L4: name the check") < text.index("Review of the plan")

        after = await conn.ext_method("planLsp/state", {"sessionId": sid})
        assert (after["mode"], after["planStatus"]) == (before["mode"], before["planStatus"])
        assert after["running"] is False and after.get("approvedPlan") is None
        assert len(client.permissions) == asked
        assert len(client.of("current_mode_update")) == mode_updates
        assert plan_file.read_text() == PLAN_TEXT

    assert (ws / "hello.py").read_text() == "print('hi')\n" and not (ws / "pwned").exists()
    sent = requests_of(transcript)[-4:]
    opening = json.dumps(sent[0]["messages"], ensure_ascii=False)
    assert "friendlier greeting" not in opening and "1. Change the greeting" in opening
    offered = set(sent[0]["tools"])
    assert offered and not offered & {"write_file", "edit_file", "bash", "exit_plan_mode"}
    results = [m for m in sent[-1]["messages"] if m["role"] == "tool"]
    assert len(results) == 3 and all("not among the tools" in json.dumps(m) for m in results)
