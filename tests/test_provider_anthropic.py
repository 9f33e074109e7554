"""The anthropic provider against a loopback Messages API server (real HTTP, real SDK)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import pytest

from plan_lsp.providers.anthropic_provider import AnthropicProvider
from plan_lsp.providers.base import (
    ChatMessage,
    Finish,
    ModelRequest,
    ProviderError,
    ToolCall,
    ToolSpec,
    Usage,
)
from plan_lsp.providers.factory import make_provider
from tests.fake_model_servers import (
    DropConnection,
    ErrorReply,
    FakeModelServer,
    ModelReply,
    RawReply,
    ReplyToolCall,
    collect,
    unused_local_port,
)

READ_FILE = ToolSpec(
    "read_file",
    "Read a file",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with FakeModelServer() as fake:
        yield fake


@pytest.fixture
async def provider(server: FakeModelServer) -> AsyncIterator[AnthropicProvider]:
    made = AnthropicProvider(
        "claude-test", base_url=server.anthropic_base_url, api_key="sk-ant-test", max_retries=0
    )
    yield made
    await made.aclose()


def simple_request() -> ModelRequest:
    return ModelRequest(
        run_id="r1",
        mode="plan",
        messages=[ChatMessage("system", "You plan."), ChatMessage("user", "Fix the bug")],
        tools=[READ_FILE],
    )


async def expect_error(provider: AnthropicProvider, kind: str) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        await collect(provider.stream(simple_request()))
    assert info.value.kind == kind, info.value.message
    return info.value


def sse(*events: Mapping[str, Any]) -> str:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)


MESSAGE_START: dict[str, Any] = {
    "type": "message_start",
    "message": {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 1},
    },
}


async def test_streams_text_tool_calls_and_usage(
    server: FakeModelServer, provider: AnthropicProvider
) -> None:
    server.enqueue(
        ModelReply(
            text="Reading the module first.",
            tool_calls=[
                ReplyToolCall("read_file", {"path": "src/app.py"}, id="toolu_a"),
                ReplyToolCall("list_dir", {}, id="toolu_b"),
            ],
            input_tokens=50,
            output_tokens=12,
            chunk=4,
        )
    )
    summary = await collect(provider.stream(simple_request()))
    assert summary.text == "Reading the module first."
    assert summary.tool_calls == [
        ("toolu_a", "read_file", '{"path": "src/app.py"}'),
        ("toolu_b", "list_dir", "{}"),
    ]
    assert summary.finish == Finish("tool_calls", Usage(input_tokens=50, output_tokens=12))
    assert len(summary.events) > 10


async def test_end_turn_and_max_tokens_reasons(
    server: FakeModelServer, provider: AnthropicProvider
) -> None:
    server.enqueue(ModelReply(text="Done."), ModelReply(text="cut", finish_reason="max_tokens"))
    summary = await collect(provider.stream(simple_request()))
    assert (summary.text, summary.tool_calls) == ("Done.", [])
    assert summary.finish is not None and summary.finish.reason == "stop"
    summary = await collect(provider.stream(simple_request()))
    assert summary.finish is not None and summary.finish.reason == "length"


async def test_tool_call_without_arguments_reports_empty_object(
    server: FakeModelServer, provider: AnthropicProvider
) -> None:
    block = {"type": "tool_use", "id": "toolu_z", "name": "list_dir", "input": {}}
    server.enqueue(
        RawReply(
            sse(
                MESSAGE_START,
                {"type": "content_block_start", "index": 0, "content_block": block},
                {"type": "content_block_stop", "index": 0},
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                    "usage": {"output_tokens": 2},
                },
                {"type": "message_stop"},
            )
        )
    )
    summary = await collect(provider.stream(simple_request()))
    assert summary.tool_calls == [("toolu_z", "list_dir", "{}")]


async def test_request_maps_system_tools_and_tool_results(
    server: FakeModelServer, provider: AnthropicProvider
) -> None:
    server.enqueue(ModelReply(text="ok"))
    messages = [
        ChatMessage("system", "You plan."),
        ChatMessage("system", "Be brief."),
        ChatMessage("user", "Fix the bug"),
        ChatMessage(
            "assistant",
            "Looking.",
            tool_calls=[
                ToolCall("toolu_1", "read_file", '{"path": "a.py"}'),
                ToolCall("toolu_2", "read_file", '{"path": "b'),
            ],
        ),
        ChatMessage("tool", "print(1)", tool_call_id="toolu_1", name="read_file"),
        ChatMessage("tool", '{"error": "invalid_arguments"}', tool_call_id="toolu_2"),
        ChatMessage("system", "Plan mode is active.", meta={"ephemeral": True}),
    ]
    request = ModelRequest(
        run_id="r1",
        mode="plan",
        messages=messages,
        tools=[READ_FILE],
        model="claude-override",
        temperature=0.3,
    )
    await collect(provider.stream(request))

    [recorded] = server.requests
    assert recorded.path == "/v1/messages"
    headers = recorded.headers
    assert "sk-ant-test" in (headers.get("x-api-key", "") + headers.get("authorization", ""))
    body = recorded.body
    assert body["model"] == "claude-override"
    assert body["stream"] is True
    assert body["max_tokens"] == 4096
    assert body["temperature"] == 0.3
    # Prompt-cache breakpoints: the system prompt (with the tools before it), and the last
    # stored block of each of the last two user turns, never the ephemeral context.
    cache = {"cache_control": {"type": "ephemeral"}}
    assert body["system"] == [{"type": "text", "text": "You plan.\n\nBe brief.", **cache}]
    assert body["tools"] == [
        {"name": "read_file", "description": "Read a file", "input_schema": READ_FILE.parameters}
    ]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Fix the bug", **cache}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Looking."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "read_file",
                    "input": {"path": "a.py"},
                },
                {
                    "type": "tool_use",
                    "id": "toolu_2",
                    "name": "read_file",
                    "input": {},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "print(1)"},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": '{"error": "invalid_arguments"}',
                    **cache,
                },
                {"type": "text", "text": "Plan mode is active."},
            ],
        },
    ]


async def test_max_tokens_from_provider_settings(server: FakeModelServer) -> None:
    server.enqueue(ModelReply(text="hi"))
    provider = AnthropicProvider(
        "m", base_url=server.anthropic_base_url, api_key="k", max_tokens=99, max_retries=0
    )
    try:
        await collect(provider.stream(simple_request()))
    finally:
        await provider.aclose()
    body = server.requests[0].body
    assert body["max_tokens"] == 99
    assert "temperature" not in body


async def test_401_is_auth(server: FakeModelServer, provider: AnthropicProvider) -> None:
    server.enqueue(ErrorReply(401, "invalid x-api-key"))
    error = await expect_error(provider, "auth")
    assert "invalid x-api-key" in error.message


async def test_429_is_rate_limit_with_retry_after(
    server: FakeModelServer, provider: AnthropicProvider
) -> None:
    server.enqueue(ErrorReply(429, "Number of requests exceeded", headers={"Retry-After": "12"}))
    error = await expect_error(provider, "rate_limit")
    assert error.retry_after == 12.0


async def test_400_is_bad_request(server: FakeModelServer, provider: AnthropicProvider) -> None:
    server.enqueue(ErrorReply(400, "messages.0.content: empty"))
    error = await expect_error(provider, "bad_request")
    assert "messages.0.content: empty" in error.message


@pytest.mark.parametrize("status", [500, 529])
async def test_5xx_is_server(
    server: FakeModelServer, provider: AnthropicProvider, status: int
) -> None:
    server.enqueue(ErrorReply(status, "Overloaded"))
    await expect_error(provider, "server")


@pytest.mark.parametrize(
    ("error_type", "kind"), [("overloaded_error", "server"), ("rate_limit_error", "rate_limit")]
)
async def test_error_event_inside_stream(
    server: FakeModelServer, provider: AnthropicProvider, error_type: str, kind: str
) -> None:
    error = {"type": "error", "error": {"type": error_type, "message": "try later"}}
    server.enqueue(RawReply(sse(MESSAGE_START, error)))
    raised = await expect_error(provider, kind)
    assert "try later" in raised.message


async def test_unparsable_stream_is_malformed(
    server: FakeModelServer, provider: AnthropicProvider
) -> None:
    server.enqueue(RawReply(sse(MESSAGE_START) + "event: content_block_delta\ndata: {oops\n\n"))
    await expect_error(provider, "malformed_stream")


async def test_stream_without_stop_reason_is_malformed(
    server: FakeModelServer, provider: AnthropicProvider
) -> None:
    block = {"type": "text", "text": ""}
    server.enqueue(
        RawReply(
            sse(
                MESSAGE_START,
                {"type": "content_block_start", "index": 0, "content_block": block},
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": "half"},
                },
            )
        )
    )
    await expect_error(provider, "malformed_stream")


async def test_dropped_connection_is_connection(
    server: FakeModelServer, provider: AnthropicProvider
) -> None:
    server.enqueue(DropConnection(partial=sse(MESSAGE_START)))
    error = await expect_error(provider, "connection")
    assert "mid-response" in error.message


async def test_connection_refused_is_connection() -> None:
    port = unused_local_port()
    provider = AnthropicProvider(
        "m", base_url=f"http://127.0.0.1:{port}", api_key="k", max_retries=0
    )
    try:
        error = await expect_error(provider, "connection")
    finally:
        await provider.aclose()
    assert "cannot reach" in error.message


async def test_factory_reads_api_key_from_environment(
    server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    server.enqueue(ModelReply(text="hi"))
    provider = make_provider("anthropic", model="m", base_url=server.anthropic_base_url)
    assert isinstance(provider, AnthropicProvider)
    try:
        assert (await collect(provider.stream(simple_request()))).text == "hi"
    finally:
        await provider.aclose()
    headers = server.requests[0].headers
    assert "sk-ant-env" in (headers.get("x-api-key", "") + headers.get("authorization", ""))


async def test_cancelling_mid_stream_propagates_and_frees_the_provider(
    server: FakeModelServer, provider: AnthropicProvider
) -> None:
    server.enqueue(ModelReply(text="x" * 100, chunk=1, delay_ms=20), ModelReply(text="next"))
    streaming = asyncio.Event()

    async def consume() -> None:
        async for _ in provider.stream(simple_request()):
            streaming.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(streaming.wait(), timeout=10)
    task.cancel()
    # Cancellation is not turned into a ProviderError.
    with pytest.raises(asyncio.CancelledError):
        await task
    assert (await collect(provider.stream(simple_request()))).text == "next"


def _marked(params: dict[str, Any]) -> list[str]:
    """What each cache breakpoint of a request marks: 'system', 'tool:NAME', or the text or
    tool_result content of the message block."""
    out = [f"tool:{t['name']}" for t in params.get("tools", []) if "cache_control" in t]
    system = params.get("system")
    if isinstance(system, list) and any("cache_control" in b for b in system):
        out.append("system")
    for turn in params["messages"]:
        for block in turn["content"]:
            if "cache_control" in block:
                out.append(block.get("text") or block.get("content") or block["type"])
    return out


def test_cache_breakpoints_move_with_the_history() -> None:
    """At most four breakpoints: the system prompt (tools before it), the last stored block
    of the last two user turns, and one on a fixed grid of user turns; the ephemeral context
    after them is never marked, and each step's newest breakpoint is the next step's older
    one (what it reads back)."""
    provider = AnthropicProvider("m", base_url="http://127.0.0.1:1", api_key="k")
    stored = [ChatMessage("user", "Fix the bug")]
    reminder = ChatMessage("user", "Pinned context", meta={"ephemeral": True})
    previous: list[str] = []
    for step in range(11):
        request = ModelRequest(
            "r", "build", [ChatMessage("system", "You build."), *stored, reminder], [READ_FILE]
        )
        marked = _marked(provider.request_params(request))
        assert len(marked) <= 4 and marked[0] == "system" and "Pinned context" not in marked
        newest = "Fix the bug" if step == 0 else f"result {step - 1}"
        assert marked[-1] == newest
        if previous:
            assert marked[-2] == previous[-1]
        if step >= 8:
            # A breakpoint that stays put (every GRID_TURNS user turns): what pruning leaves
            # of the older history is still read back.
            assert marked[1] == "result 5" and len(marked) == 4
        previous = marked
        call = ToolCall(f"toolu_{step}", "read_file", '{"path": "a"}')
        stored += [
            ChatMessage("assistant", "", tool_calls=[call]),
            ChatMessage("tool", f"result {step}", tool_call_id=call.id, name="read_file"),
        ]
    tools_only = provider.request_params(
        ModelRequest("r", "build", [ChatMessage("user", "hi")], [READ_FILE])
    )
    assert _marked(tools_only) == ["tool:read_file", "hi"]
