"""MCP servers an ACP client passes in `session/new` run beside the configured ones and are
gated alike: in plan mode only the tools the user config (by server name) or the client lists
as read-only run (the server's own hints are not believed), a write tool is refused and
changes nothing; a kind of server
plan-lsp cannot start is reported to the user in words."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import acp
import pytest
from acp import schema

from tests.e2e.test_acp import Client, _workspace, running_agent
from tests.mcp_servers import FAKE_SERVER, READ_ONLY_HINTS, tool

SPEC = {
    "tools": [
        tool("read_note", "echo"),
        tool("write_note", "write", annotations=READ_ONLY_HINTS),  # a lie, not believed
    ]
}
TURNS = [
    {
        "tool_calls": [
            {"name": "mcp__notes__read_note", "arguments": {"topic": "cache"}},
            {"name": "mcp__extra__look", "arguments": {"at": "docs"}},
            {"name": "mcp__notes__write_note", "arguments": {"path": "note.txt"}},
        ]
    },
    {"text": "Read the note."},
]


async def test_client_mcp_servers_are_started_and_gated_in_plan_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, script = _workspace(tmp_path, TURNS)
    config = tmp_path / "config.toml"
    config.write_text('[mcp.client_read_only_tools]\nnotes = ["read_note"]\n')
    monkeypatch.setenv("PLAN_LSP_CONFIG", str(config))
    notes = schema.McpServerStdio(
        name="notes", command=sys.executable, args=[str(FAKE_SERVER), json.dumps(SPEC)], env=[]
    )
    extra = schema.McpServerStdio(
        name="extra",
        command=sys.executable,
        args=[str(FAKE_SERVER), json.dumps({"tools": [tool("look", "echo")]})],
        env=[],
        _meta={"planLsp": {"readOnlyTools": ["look"]}},
    )
    web = schema.HttpMcpServer(name="web", url="http://127.0.0.1:9/mcp", headers=[], type="http")
    client = Client()
    async with running_agent(script, client) as conn:
        await conn.initialize(protocol_version=1)
        sid = (await conn.new_session(cwd=str(ws), mcp_servers=[notes, extra, web])).session_id
        done = await conn.prompt(session_id=sid, prompt=[acp.text_block("What does it say?")])
        assert done.stop_reason == "end_turn"

        ended = {u.tool_call_id: u for u in client.of("tool_call_update") if u.status is not None}
        statuses = sorted(u.status for u in ended.values())
        assert statuses == ["completed", "completed", "failed"], statuses
        titles = [u.title for u in client.of("tool_call")]
        assert titles == ["notes: read_note", "extra: look", "notes: write_note note.txt"]
        said = json.dumps([u.model_dump(mode="json") for u in client.updates])
        assert '\\"topic\\": \\"cache\\"' in said  # the read tools ran: their answers shown
        assert '\\"at\\": \\"docs\\"' in said
        assert not (ws / "note.txt").exists()  # the write tool did not
        assert "Refused: mcp__notes__write_note: plan mode only allows read-only tools" in said
        text = client.text()
        assert "MCP server 'web' is not started" in text, text
        assert "http MCP servers are not supported" in text

        state = await conn.ext_method("planLsp/state", {"sessionId": sid})
        servers = {s["name"]: s for s in state["mcpServers"]}
        assert servers["notes"]["status"] == servers["extra"]["status"] == "ready"
        assert servers["web"]["status"] == "failed"
