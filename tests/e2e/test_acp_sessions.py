"""Several ACP sessions on one folder in one `plan-lsp acp` process (as CodeCompanion opens
them): each its own conversation, mode and runs, titled by its first prompt; one run changes
the folder at a time, the other refused naming the session writing; a session resumed in a
new process."""

from __future__ import annotations

import asyncio
from pathlib import Path

import acp

from tests.e2e.test_acp import Client, _workspace, running_agent

SLOW = {"text": "working " * 200, "pace": {"chars_per_second": 40, "chunk": [4, 8]}}


async def test_two_sessions_on_one_folder_are_both_answered_and_one_writes(
    tmp_path: Path,
) -> None:
    turns = [{"text": "First session here."}, {"text": "Second session here."}, SLOW]
    ws, script = _workspace(tmp_path, [*turns, {"text": "Resumed here."}])
    client = Client()
    async with running_agent(script, client) as conn:
        await conn.initialize(protocol_version=1)
        one = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        two = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        assert one != two

        first = await conn.prompt(session_id=one, prompt=[acp.text_block("Hello  one\nmore")])
        second = await conn.prompt(session_id=two, prompt=[acp.text_block("Hello two")])
        assert (first.stop_reason, second.stop_reason) == ("end_turn", "end_turn")
        assert "First session here." in client.text() and "Second session here." in client.text()
        titles = [u.title for u in client.of("session_info_update")]
        assert titles == ["Hello one more", "Hello two"]

        # Modes are each session's own.
        await conn.set_session_mode(session_id=one, mode_id="build")
        states = [await conn.ext_method("planLsp/state", {"sessionId": s}) for s in (one, two)]
        assert [s["mode"] for s in states] == ["build", "plan"]

        # One run changes the folder at a time: session one's build run is under way, so
        # session two's (in build mode too) is refused, naming session one.
        writing = asyncio.ensure_future(
            conn.prompt(session_id=one, prompt=[acp.text_block("Change things")])
        )
        while "working" not in client.text():
            await asyncio.sleep(0.05)
        await conn.set_session_mode(session_id=two, mode_id="build")
        before = len(client.updates)
        refused = await conn.prompt(session_id=two, prompt=[acp.text_block("Change more")])
        assert refused.stop_reason == "end_turn"
        said = "".join(
            u.content.text for u in client.of("agent_message_chunk", before) if u.content.text
        )
        assert f"session {one} is changing this folder" in said, said
        assert "one run changes a folder at a time" in said
        await conn.cancel(session_id=one)
        assert (await writing).stop_reason == "cancelled"

        # Once it ended, the slot is free: a plan-mode session never needed it.
        listed = await conn.list_sessions(cwd=str(ws))
        assert {i.session_id for i in listed.sessions} == {one, two}

    # A new process resumes session two: its mode, and a prompt is answered there.
    resumed = Client()
    async with running_agent(script, resumed) as conn:
        init = await conn.initialize(protocol_version=1)
        capabilities = init.agent_capabilities
        assert capabilities is not None and capabilities.session_capabilities is not None
        assert capabilities.session_capabilities.resume is not None
        answer = await conn.resume_session(cwd=str(ws), session_id=two, mcp_servers=[])
        assert answer.modes is not None and answer.modes.current_mode_id == "build"
        assert resumed.of("user_message_chunk") == []  # resuming replays nothing
        again = await conn.prompt(session_id=two, prompt=[acp.text_block("Hello again")])
        assert again.stop_reason == "end_turn"
        assert resumed.of("session_info_update") == []  # titled already
        state = await conn.ext_method("planLsp/state", {"sessionId": two})
        assert state["mode"] == "build"
        # An unknown session is not made up.
        try:
            await conn.resume_session(cwd=str(ws), session_id="conv-nothere", mcp_servers=[])
        except acp.RequestError as exc:
            assert exc.code == -32002
        else:
            raise AssertionError("an unknown session was resumed")
