"""The transcript wrapper: one JSON line per model request, for any provider."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from plan_lsp.providers.base import ChatMessage, ModelRequest, ProviderError, ToolCall, ToolSpec
from plan_lsp.providers.openai_provider import OpenAIProvider
from plan_lsp.providers.scripted import ScriptedProvider
from plan_lsp.providers.transcript import TranscriptProvider
from tests.fake_model_servers import FakeModelServer, ModelReply, collect


def tool(name: str) -> ToolSpec:
    return ToolSpec(name, f"{name} tool", {"type": "object", "properties": {}})


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def scripted(tmp_path: Path) -> ScriptedProvider:
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            {
                "turns": [
                    {"text": "Reading.", "tool_calls": [{"name": "read_file", "arguments": {}}]},
                    {"text": "Done."},
                ]
            }
        ),
        encoding="utf-8",
    )
    return ScriptedProvider(script)


async def test_one_line_per_request_with_messages_as_sent(
    tmp_path: Path, scripted: ScriptedProvider
) -> None:
    path = tmp_path / "logs" / "transcript.jsonl"
    provider = TranscriptProvider(scripted, path)
    assert provider.name == "scripted"
    messages = [
        ChatMessage("system", "You plan."),
        ChatMessage("user", "Fix it ✓"),
        ChatMessage("system", "Plan mode reminder", meta={"ephemeral": True}),
    ]
    first = ModelRequest("run-1", "plan", messages, [tool("read_file"), tool("grep")])
    summary = await collect(provider.stream(first))
    # The wrapper delegates unchanged.
    assert summary.text == "Reading."
    assert summary.tool_calls == [("call_1_0", "read_file", "{}")]

    follow_up = [
        *messages[:2],
        ChatMessage("assistant", "Reading.", tool_calls=[ToolCall("call_1_0", "read_file", "{}")]),
        ChatMessage("tool", "contents", tool_call_id="call_1_0"),
    ]
    second = ModelRequest("run-2", "build", follow_up, [tool("write_file")])
    assert (await collect(provider.stream(second))).text == "Done."

    lines = read_lines(path)
    assert lines == [
        {
            "seq": 1,
            "runId": "run-1",
            "mode": "plan",
            "tools": ["read_file", "grep"],
            "messages": [m.to_json() for m in messages],
        },
        {
            "seq": 2,
            "runId": "run-2",
            "mode": "build",
            "tools": ["write_file"],
            "messages": [m.to_json() for m in follow_up],
        },
    ]
    assert lines[0]["messages"][2]["meta"] == {"ephemeral": True}


async def test_line_is_written_when_the_request_is_made(
    tmp_path: Path, scripted: ScriptedProvider
) -> None:
    path = tmp_path / "t.jsonl"
    provider = TranscriptProvider(scripted, path)
    stream = provider.stream(ModelRequest("r", "plan", [ChatMessage("user", "x")], []))
    # Visible on disk before the response is consumed.
    assert [line["seq"] for line in read_lines(path)] == [1]
    await collect(stream)


async def test_appends_to_an_existing_transcript(
    tmp_path: Path, scripted: ScriptedProvider
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"seq": 1, "old": true}\n', encoding="utf-8")
    provider = TranscriptProvider(scripted, path)
    await collect(provider.stream(ModelRequest("r", "plan", [], [])))
    lines = read_lines(path)
    assert lines[0] == {"seq": 1, "old": True}
    assert lines[1]["seq"] == 1 and lines[1]["runId"] == "r"


def test_unwritable_path_is_a_config_error(tmp_path: Path, scripted: ScriptedProvider) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    with pytest.raises(ProviderError) as info:
        TranscriptProvider(scripted, blocker / "t.jsonl")
    assert info.value.kind == "config"
    assert "transcript" in info.value.message


async def test_records_requests_to_a_real_provider(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with FakeModelServer() as server:
        server.enqueue(ModelReply(text="hello"))
        inner = OpenAIProvider("m", base_url=server.openai_base_url, max_retries=0)
        provider = TranscriptProvider(inner, path)
        try:
            request = ModelRequest("r9", "plan", [ChatMessage("user", "hi")], [tool("glob")])
            assert (await collect(provider.stream(request))).text == "hello"
        finally:
            await inner.aclose()
    [line] = read_lines(path)
    assert line["runId"] == "r9" and line["tools"] == ["glob"]
    assert line["messages"] == [{"role": "user", "content": "hi"}]
