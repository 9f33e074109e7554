"""`plan-lsp acp` driven by the ACP SDK's own client side (`acp.spawn_agent_process`), as
Zed or a JetBrains IDE drives it: initialize → new session (modes and the mode config
option) → a plan run in which a write is refused and a shell command runs → the plan's
switch_mode permission request showing the whole plan → approve → the Do run's edit on disk
with a diff → plan entries → the previous permission mode back → cancel → load replays."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import acp
from acp import schema

from plan_lsp.protocol.params import PROMPT_MAX_CHARS
from plan_lsp.session.state_home import workspace_state_file
from tests.acp_client import RecordingClient
from tests.turns import GREETING_EDIT, calls, plan_turns
from tests.turns import PLAN_TEXT as PLAN

PLAN_FILE = ".plan-lsp/plans/PLAN.md"


def _turns() -> list[dict[str, Any]]:
    return [
        {
            "text": "Looking around first.",
            "tool_calls": [
                {"name": "read_file", "arguments": {"path": "hello.py"}},
                {"name": "bash", "arguments": {"command": "ls"}},
            ],
        },
        {
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "hello.py", "content": "oops"}},
            ]
        },
        *plan_turns(),
        # The Do run (ask before edits: the client is asked for the edit).
        {
            "tool_calls": [
                {
                    "name": "todo_write",
                    "arguments": {
                        "todos": [
                            {"content": "Change the greeting", "status": "in_progress"},
                            {"content": "Run nothing else", "status": "pending"},
                        ]
                    },
                }
            ]
        },
        calls(GREETING_EDIT),
        {
            "tool_calls": [
                {
                    "name": "todo_write",
                    "arguments": {
                        "todos": [
                            {"content": "Change the greeting", "status": "completed"},
                            {"content": "Run nothing else", "status": "completed"},
                        ]
                    },
                }
            ]
        },
        {"text": "Done: the greeting is updated."},
        # A slow answer, cancelled by the client.
        {"text": "thinking " * 200, "pace": {"chars_per_second": 40, "chunk": [4, 8]}},
    ]


class Client(RecordingClient):
    """Approves plans and edits once; denies anything else it is asked; notes how many
    updates had arrived when each permission request came."""

    def __init__(self) -> None:
        super().__init__({"switch_mode": "allow_once", "edit": "allow_once"})
        self.asked_after: list[int] = []

    async def request_permission(
        self, session_id: str, tool_call: schema.ToolCallUpdate, options: list[Any], **kw: Any
    ) -> schema.RequestPermissionResponse:
        self.asked_after.append(len(self.updates))
        return await super().request_permission(session_id, tool_call, options, **kw)

    def text_before(self, number: int) -> str:
        """The agent's message as it stood when permission request `number` came."""
        return "".join(
            u.content.text
            for u in self.updates[: self.asked_after[number]]
            if u.session_update == "agent_message_chunk" and hasattr(u.content, "text")
        )

    def text(self) -> str:
        return "".join(
            u.content.text for u in self.of("agent_message_chunk") if hasattr(u.content, "text")
        )


def _workspace(tmp_path: Path, turns: list[dict[str, Any]]) -> tuple[Path, Path]:
    """The sample project and a script of `turns` for the agent."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "hello.py").write_text("print('hi')\n")
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"chunk": 16, "turns": turns}))
    return ws, script


@asynccontextmanager
async def running_agent(
    script: Path, client: Any, transcript: Path | None = None
) -> AsyncIterator[Any]:
    """`plan-lsp acp` with the scripted model (its requests recorded in `transcript`)."""
    args = ["-m", "plan_lsp", "acp", "--provider", "scripted", "--script", str(script)]
    args += ["--transcript", str(transcript)] if transcript is not None else []
    async with acp.spawn_agent_process(client, sys.executable, *args, env=dict(os.environ)) as (
        conn,
        _process,
    ):
        yield conn


async def test_plan_approve_do_cancel_and_load_over_acp(tmp_path: Path) -> None:
    ws, script = _workspace(tmp_path, _turns())
    client = Client()
    async with running_agent(script, client) as conn:
        init = await conn.initialize(protocol_version=1)
        assert init.protocol_version == 1
        assert init.agent_capabilities is not None and init.agent_capabilities.load_session

        new = await conn.new_session(cwd=str(ws), mcp_servers=[])
        sid = new.session_id
        assert new.modes is not None and new.modes.current_mode_id == "plan"
        assert [m.id for m in new.modes.available_modes] == ["plan", "build"]
        option = (
            new.config_options[0].root
            if hasattr(new.config_options[0], "root")
            else (new.config_options[0])
        )
        assert (option.id, option.category, option.current_value) == ("mode", "mode", "plan")
        state = await conn.ext_method("planLsp/state", {"sessionId": sid})
        permission_before = state["permissionMode"]

        answer = await conn.prompt(
            session_id=sid, prompt=[acp.text_block("Make the greeting polite")]
        )
        assert answer.stop_reason == "end_turn"

        calls = {u.tool_call_id: u for u in client.of("tool_call")}
        results = {u.tool_call_id: u for u in client.of("tool_call_update") if u.status}
        by_tool = {u.field_meta["planLsp"]["tool"]: u for u in calls.values()}
        # Titles a person reads.
        assert by_tool["read_file"].title == "Read hello.py"
        assert by_tool["bash"].title == "Run `ls`"
        assert by_tool["exit_plan_mode"].title == "Submit the plan for approval"
        # The write in plan mode was refused, and said why, in words.
        write = by_tool["write_file"]
        assert (write.kind, write.title) == ("edit", "Write hello.py")
        assert results[write.tool_call_id].status == "failed"
        refused = results[write.tool_call_id].content[0].content.text
        assert refused.startswith("Refused: write_file: plan mode only allows read-only tools")
        assert "{" not in refused and "tool_not_allowed" not in refused
        ended = [u.tool_call_id for u in client.of("tool_call_update") if u.status == "failed"]
        assert ended.count(write.tool_call_id) == 1  # the refusal is said once
        # The shell command ran (in plan-lsp's own sandbox or classifier, never the client's
        # terminal) and its output came back.
        shell = next(u for u in calls.values() if u.kind == "execute")
        assert results[shell.tool_call_id].status == "completed"
        shown = json.dumps([c.model_dump() for c in results[shell.tool_call_id].content or []])
        assert "hello.py" in shown
        assert "read_file" in by_tool and by_tool["read_file"].kind == "read"

        # The plan's approval: before it was asked, the whole plan was in the conversation
        # (the agent's message, the text exactly in a chunk of its own) and the
        # exit_plan_mode call's content; the request is on that call and shows it too.
        number, approval = next(
            (n, p) for n, p in enumerate(client.permissions) if p.tool_call.kind == "switch_mode"
        )
        shown_plan = approval.tool_call.content[0].content.text  # type: ignore[index,union-attr]
        assert shown_plan == PLAN
        before = client.text_before(number)
        assert before.endswith(f"**The plan for your approval (`{PLAN_FILE}`):**\n\n{PLAN}\n")
        chunks = [u.content.text for u in client.of("agent_message_chunk")]
        assert PLAN in chunks
        exit_call = by_tool["exit_plan_mode"].tool_call_id
        assert approval.tool_call.tool_call_id == exit_call
        told = [
            u.content[0].content.text
            for u in client.updates[: client.asked_after[number]]
            if u.session_update == "tool_call_update" and u.tool_call_id == exit_call and u.content
        ]
        assert told[-1] == PLAN
        assert approval.tool_call.title == f"Build from this plan ({PLAN_FILE})"
        kinds = sorted(o.kind for o in approval.options)
        assert kinds == ["allow_always", "allow_once", "reject_once"]
        # What was approved is exactly what the user was shown.
        state = await conn.ext_method("planLsp/state", {"sessionId": sid})
        assert state["approvedPlan"]["sha256"] == hashlib.sha256(PLAN.encode()).hexdigest()
        # After the Do run: plan mode (`after_do`), and the permission mode from before.
        assert state["mode"] == "plan"
        assert [u.current_mode_id for u in client.of("current_mode_update")][-1] == "plan"
        assert state["permissionMode"] == permission_before

        # The Do run asked before its edit (ask before edits), edited the disk, sent a diff.
        assert (ws / "hello.py").read_text() == "print('hello, world')\n"
        edit = next(p for p in client.permissions if p.tool_call.kind == "edit")
        assert edit.tool_call.title == "Edit hello.py"
        # Asked on the model's call, announced before and completed after.
        assert calls[edit.tool_call.tool_call_id].title == "Edit hello.py"
        assert results[edit.tool_call.tool_call_id].status == "completed"
        # The edit's permission request shows the server's own before/after as a diff.
        asked = [c for c in edit.tool_call.content or [] if c.type == "diff"]
        assert [(d.old_text, d.new_text) for d in asked] == [
            ("print('hi')\n", "print('hello, world')\n")
        ]
        edit_call = by_tool["edit_file"]
        diffs = [c for c in results[edit_call.tool_call_id].content or [] if c.type == "diff"]
        assert diffs and diffs[0].old_text == "print('hi')\n"
        assert diffs[0].new_text == "print('hello, world')\n"
        assert diffs[0].path == str(ws / "hello.py")
        plans = client.of("plan")
        assert [e.status for e in plans[-1].entries] == ["completed", "completed"]
        assert [e.content for e in plans[0].entries] == ["Change the greeting", "Run nothing else"]
        assert "Done: the greeting is updated." in client.text()
        usage = client.of("usage_update")
        assert usage and usage[-1].size > 0
        # Told only when a figure changed.
        figures = [(u.used, u.size, u.cost) for u in usage]
        assert all(a != b for a, b in itertools.pairwise(figures)), figures

        # Cancel: the slow turn ends with stopReason cancelled.
        turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[acp.text_block("more")]))
        while "thinking" not in client.text():
            await asyncio.sleep(0.05)
        await conn.cancel(session_id=sid)
        assert (await turn).stop_reason == "cancelled"

    # A new agent process lists the folder's sessions and loads this one: the conversation
    # is replayed.
    replayed = Client()
    async with running_agent(script, replayed) as conn:
        init = await conn.initialize(protocol_version=1)
        assert init.agent_capabilities is not None
        assert init.agent_capabilities.session_capabilities is not None
        assert init.agent_capabilities.session_capabilities.list is not None
        listed = await conn.list_sessions(cwd=str(ws))
        assert [(i.session_id, i.title, i.cwd) for i in listed.sessions][:1] == [
            (sid, "Make the greeting polite", str(ws.resolve()))
        ]
        assert listed.next_cursor is None
        # A folder with no state lists nothing, and listing it keeps nothing for it.
        empty = tmp_path / "never-used"
        empty.mkdir()
        assert (await conn.list_sessions(cwd=str(empty))).sessions == []
        assert not workspace_state_file(empty.resolve()).exists()
        loaded = await conn.load_session(cwd=str(ws), session_id=sid, mcp_servers=[])
        assert loaded is not None and loaded.modes is not None
        assert loaded.modes.current_mode_id == "plan"
        users = [u.content.text for u in replayed.of("user_message_chunk")]
        assert users[:2] == ["Make the greeting polite", "more"]
        assert "Done: the greeting is updated." in replayed.text()
        assert "Edit hello.py" in [u.title for u in replayed.of("tool_call")]
        assert "{" not in json.dumps(
            [c.content.text for u in replayed.of("tool_call_update") if u.status == "failed"
             for c in u.content or [] if c.type == "content"]
        )  # fmt: skip
        thoughts = [u.content.text for u in replayed.of("agent_thought_chunk")]
        assert any(t.startswith("Permission for edit_file") and "allow once" in t for t in thoughts)
        state = await conn.ext_method("planLsp/state", {"sessionId": sid})
        assert state["approvedPlan"]["sha256"] == hashlib.sha256(PLAN.encode()).hexdigest()
        # The workspace's plans, as over LSP: the approved and carried-out plan, by its file.
        listed = (await conn.ext_method("planLsp/plans", {"sessionId": sid}))["plans"]
        assert [(Path(urlparse(e["uri"]).path).name, e["status"]) for e in listed] == [
            ("PLAN.md", "done")
        ]
        assert listed[0]["approvedAt"] and listed[0]["current"]


def _revision_turns() -> list[dict[str, Any]]:
    return [*plan_turns(), *plan_turns(PLAN + "3. Say goodbye too.\n")]


async def test_keep_planning_then_feedback_revises_and_modes_switch(tmp_path: Path) -> None:
    ws, script = _workspace(tmp_path, _revision_turns())
    client = Client()
    client.choose["switch_mode"] = "reject_once"
    async with running_agent(script, client) as conn:
        await conn.initialize(protocol_version=1)
        sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id

        answer = await conn.prompt(session_id=sid, prompt=[acp.text_block("plan it")])
        assert answer.stop_reason == "end_turn"
        state = await conn.ext_method("planLsp/state", {"sessionId": sid})
        assert (state["mode"], state["planStatus"]) == ("plan", "rejected")
        assert state["approvedPlan"] is None
        assert "Say what to change" in client.text()

        # The next message is the feedback: the plan is revised and offered again, in full.
        await conn.prompt(session_id=sid, prompt=[acp.text_block("say goodbye too")])
        offered = [p for p in client.permissions if p.tool_call.kind == "switch_mode"]
        assert len(offered) == 2
        text = offered[1].tool_call.content[0].content.text  # type: ignore[index,union-attr]
        assert text.endswith("3. Say goodbye too.\n")
        # In the conversation before it was asked: what changed, and the whole text.
        revised = f"**Revised plan (`{PLAN_FILE}`, 1 line added, 0 removed):**\n\n{text}\n"
        assert client.text_before(1).endswith(revised)
        assert (ws / "hello.py").read_text() == "print('hi')\n"

        # Modes: session/set_mode and the mode config option switch like planLsp/setMode.
        await conn.set_session_mode(session_id=sid, mode_id="build")
        state = await conn.ext_method("planLsp/state", {"sessionId": sid})
        assert state["mode"] == "build"
        changed = await conn.set_config_option(config_id="mode", session_id=sid, value="plan")
        option = changed.config_options[0]
        option = option.root if hasattr(option, "root") else option
        assert option.current_value == "plan"
        assert [u.current_mode_id for u in client.of("current_mode_update")][-2:] == [
            "build",
            "plan",
        ]
        # Bad input gets a clear error and loses nothing.
        for bad in (
            conn.set_session_mode(session_id=sid, mode_id="yolo"),
            conn.set_config_option(config_id="model", session_id=sid, value="x"),
            conn.ext_method("planLsp/state", {"sessionId": "no-such-session"}),
            conn.new_session(cwd="relative/path", mcp_servers=[]),
            conn.list_sessions(cwd="relative/path"),
        ):
            try:
                await bad
            except acp.RequestError as exc:
                assert exc.code in (-32602, -32002), exc
            else:
                raise AssertionError("bad input was accepted")
        state = await conn.ext_method("planLsp/state", {"sessionId": sid})
        assert state["mode"] == "plan"
        # Without a folder: the sessions of the folders open here, this one among them.
        listed = await conn.list_sessions()
        assert sid in [i.session_id for i in listed.sessions]


class SilentClient(Client):
    """Never answers the plan's permission request: only a cancel ends the turn."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting = asyncio.Event()

    async def request_permission(
        self, session_id: str, tool_call: schema.ToolCallUpdate, options: list[Any], **kw: Any
    ) -> schema.RequestPermissionResponse:
        self.waiting.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


async def test_cancel_answers_a_pending_plan_approval(tmp_path: Path) -> None:
    ws, script = _workspace(tmp_path, _revision_turns())
    client = SilentClient()
    async with running_agent(script, client) as conn:
        await conn.initialize(protocol_version=1)
        sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[acp.text_block("go")]))
        await asyncio.wait_for(client.waiting.wait(), 60)
        await conn.cancel(session_id=sid)
        assert (await asyncio.wait_for(turn, 60)).stop_reason == "cancelled"
        state = await conn.ext_method("planLsp/state", {"sessionId": sid})
        # Nothing was approved; the plan waits, submitted, in plan mode.
        assert (state["mode"], state["planStatus"], state["approvedPlan"]) == (
            "plan",
            "submitted",
            None,
        )
        # The session goes on: a new prompt is accepted (and offers the plan again).
        client.waiting.clear()
        again = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[acp.text_block("x")]))
        await asyncio.wait_for(client.waiting.wait(), 60)
        await conn.cancel(session_id=sid)
        assert (await asyncio.wait_for(again, 60)).stop_reason == "cancelled"


class EditorClient(Client):
    """Declares `fs.readTextFile` and holds PLAN.md open with an unsaved line typed by the
    user; never expects to be asked to write or run anything."""

    def __init__(self, typed: str) -> None:
        super().__init__()
        self.typed = typed
        self.reads: list[str] = []

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kw: Any,
    ) -> schema.ReadTextFileResponse:
        self.reads.append(path)
        return schema.ReadTextFileResponse(content=Path(path).read_text() + self.typed)

    async def write_text_file(self, session_id: str, path: str, content: str, **kw: Any) -> None:
        raise AssertionError(f"the agent asked the client to write {path}")

    async def create_terminal(self, session_id: str, command: str, **kw: Any) -> Any:
        raise AssertionError(f"the agent asked the client to run {command}")


async def test_the_plan_approved_is_the_editors_buffer(tmp_path: Path) -> None:
    """A client that can read its buffers shows the plan as the user's editor has it (an
    unsaved line included): that text is what is shown, approved (sha256) and carried out."""
    typed = "3. Keep the file's final newline.\n"
    ws, script = _workspace(tmp_path, [*plan_turns(), {"text": "Done."}])
    client = EditorClient(typed)
    client.choose["switch_mode"] = "allow_always"
    async with acp.spawn_agent_process(
        client,
        sys.executable,
        *["-m", "plan_lsp", "acp", "--provider", "scripted", "--script", str(script)],
        env=dict(os.environ),
    ) as (conn, _process):
        caps = schema.ClientCapabilities(
            fs=schema.FileSystemCapabilities(read_text_file=True, write_text_file=True),
            terminal=True,
        )
        await conn.initialize(protocol_version=1, client_capabilities=caps)
        sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        answer = await conn.prompt(session_id=sid, prompt=[acp.text_block("plan it")])
        assert answer.stop_reason == "end_turn"
        shown = client.permissions[0].tool_call.content[0].content.text  # type: ignore[index,union-attr]
        assert shown == PLAN + typed
        # The buffer's text differs from the file's: the conversation shows it again.
        assert client.text_before(0).endswith(
            f"**Your editor's `{PLAN_FILE}` differs from the plan above (1 line added, 0 "
            f"removed); this is the text you approve:**\n\n{shown}\n"
        )
        state = await conn.ext_method("planLsp/state", {"sessionId": sid})
        assert state["approvedPlan"]["sha256"] == hashlib.sha256(shown.encode()).hexdigest()
        plan_file = Path(state["approvedPlan"]["path"])
        assert client.reads == [str(plan_file)]
        assert plan_file.read_text() == PLAN + typed  # what was approved is on disk too


async def test_a_prompt_outside_the_contracts_length_is_refused(tmp_path: Path) -> None:
    """An empty prompt, or one past the contract's limit, is refused by `session/prompt`
    naming the limit, and starts no run; the session takes the next prompt."""
    ws, script = _workspace(tmp_path, [{"text": "Hello."}])
    client = Client()
    async with running_agent(script, client) as conn:
        await conn.initialize(protocol_version=1)
        sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        too_long = "x" * (PROMPT_MAX_CHARS + 1)
        for blocks, length in (([], 0), ([acp.text_block(too_long)], len(too_long))):
            try:
                await conn.prompt(session_id=sid, prompt=blocks)
            except acp.RequestError as exc:
                assert exc.code == -32602, exc
                why = f"a prompt is 1 to {PROMPT_MAX_CHARS:,} characters, this one {length:,}"
                assert exc.data == {"prompt": why}
            else:
                raise AssertionError("a prompt outside the limit was accepted")
        assert client.of("agent_message_chunk") == []
        answer = await conn.prompt(session_id=sid, prompt=[acp.text_block("hi")])
        assert answer.stop_reason == "end_turn"
        assert client.text() == "Hello."
