"""`session/fork` through the real `plan-lsp acp` process: the fork goes on from the
conversation (the model is given what was said before), each session then goes its own way,
the fork starts in plan mode with no plan of its own, a new process loads it, and an unknown
session is not made up."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import acp

from tests.e2e.scripts import requests_of
from tests.e2e.test_acp import Client, _workspace, running_agent

TURNS = [{"text": "Noted: tangerine."}, {"text": "Fork here."}, {"text": "Original here."}]


def said(request: dict[str, Any]) -> str:
    return json.dumps(request)


async def test_a_fork_goes_on_from_the_conversation_and_then_its_own_way(tmp_path: Path) -> None:
    ws, script = _workspace(tmp_path, TURNS)
    transcript = tmp_path / "t.jsonl"
    client = Client()
    async with running_agent(script, client, transcript) as conn:
        init = await conn.initialize(protocol_version=1)
        caps = init.agent_capabilities
        assert caps is not None and caps.session_capabilities is not None
        assert caps.session_capabilities.fork is not None
        one = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        await conn.set_session_mode(session_id=one, mode_id="build")
        await conn.prompt(session_id=one, prompt=[acp.text_block("Remember tangerine")])

        forked = await conn.fork_session(session_id=one, cwd=str(ws), mcp_servers=[])
        two = forked.session_id
        assert two != one
        assert forked.modes is not None and forked.modes.current_mode_id == "plan"
        await conn.prompt(session_id=two, prompt=[acp.text_block("Only in the fork")])
        await conn.prompt(session_id=one, prompt=[acp.text_block("Back in the original")])

        first, in_fork, in_original = requests_of(transcript)
        assert "Remember tangerine" in said(in_fork) and "Noted: tangerine." in said(in_fork)
        assert "Only in the fork" in said(in_fork)
        assert "Only in the fork" not in said(in_original)
        assert "Remember tangerine" in said(in_original)
        assert "Remember tangerine" in said(first)
        state = await conn.ext_method("planLsp/state", {"sessionId": two})
        assert (state["mode"], state["planStatus"]) == ("plan", "none")
        listed = {i.session_id for i in (await conn.list_sessions(cwd=str(ws))).sessions}
        assert {one, two} <= listed
        try:
            await conn.fork_session(session_id="conv-nothere", cwd=str(ws), mcp_servers=[])
        except acp.RequestError as exc:
            assert exc.code == -32002
        else:
            raise AssertionError("an unknown session was forked")

    # A new process loads the fork: what the client was shown is replayed.
    again = Client()
    async with running_agent(script, again, tmp_path / "t2.jsonl") as conn:
        await conn.initialize(protocol_version=1)
        await conn.load_session(cwd=str(ws), session_id=two, mcp_servers=[])
        shown = "".join(
            u.content.text for u in again.of("user_message_chunk") if u.content.text
        )
        assert "Remember tangerine" in shown and "Only in the fork" in shown
