"""The openai provider against a loopback chat-completions server (real HTTP, real SDK)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator

import pytest

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
from plan_lsp.providers.openai_provider import OpenAIProvider
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
async def provider(server: FakeModelServer) -> AsyncIterator[OpenAIProvider]:
    made = OpenAIProvider(
        "local-model", base_url=server.openai_base_url, api_key="sk-test", max_retries=0
    )
    yield made
    await made.aclose()


def simple_request(**kwargs: object) -> ModelRequest:
    return ModelRequest(
        run_id="r1",
        mode="plan",
        messages=[ChatMessage("system", "You plan."), ChatMessage("user", "Fix the bug")],
        tools=[READ_FILE],
        **kwargs,  # type: ignore[arg-type]
    )


async def expect_error(provider: OpenAIProvider, kind: str) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        await collect(provider.stream(simple_request()))
    assert info.value.kind == kind, info.value.message
    return info.value


async def test_streams_text_tool_calls_and_usage(
    server: FakeModelServer, provider: OpenAIProvider
) -> None:
    server.enqueue(
        ModelReply(
            text="Let me look at the code first.",
            tool_calls=[
                ReplyToolCall("read_file", {"path": "src/app.py"}, id="call_a"),
                ReplyToolCall("list_dir", {}, id="call_b"),
            ],
            input_tokens=42,
            output_tokens=9,
            chunk=5,
        )
    )
    summary = await collect(provider.stream(simple_request()))
    assert summary.text == "Let me look at the code first."
    assert summary.tool_calls == [
        ("call_a", "read_file", '{"path": "src/app.py"}'),
        ("call_b", "list_dir", "{}"),
    ]
    assert summary.finish == Finish("tool_calls", Usage(input_tokens=42, output_tokens=9))
    # Streamed in several deltas, not one piece.
    assert len(summary.events) > 8


async def test_text_only_turn_finishes_with_stop(
    server: FakeModelServer, provider: OpenAIProvider
) -> None:
    server.enqueue(ModelReply(text="Done."), ModelReply(text="cut", finish_reason="length"))
    summary = await collect(provider.stream(simple_request()))
    assert (summary.text, summary.tool_calls) == ("Done.", [])
    assert summary.finish is not None and summary.finish.reason == "stop"
    summary = await collect(provider.stream(simple_request()))
    assert summary.finish is not None and summary.finish.reason == "length"


async def test_request_maps_roles_tools_and_options(
    server: FakeModelServer, provider: OpenAIProvider
) -> None:
    server.enqueue(ModelReply(text="ok"))
    messages = [
        ChatMessage("system", "You plan."),
        ChatMessage("user", "Fix the bug"),
        ChatMessage(
            "assistant",
            "",
            tool_calls=[ToolCall("call_1", "read_file", '{"path": "a.py"}')],
        ),
        ChatMessage("tool", '{"content": "print(1)"}', tool_call_id="call_1", name="read_file"),
        ChatMessage("system", "Plan mode is active.", meta={"ephemeral": True}),
    ]
    request = ModelRequest(
        run_id="r1",
        mode="plan",
        messages=messages,
        tools=[READ_FILE],
        model="override-model",
        temperature=0.2,
        max_tokens=321,
    )
    await collect(provider.stream(request))

    [recorded] = server.requests
    assert recorded.path == "/v1/chat/completions"
    assert recorded.headers["authorization"] == "Bearer sk-test"
    body = recorded.body
    assert body["model"] == "override-model"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["temperature"] == 0.2
    assert body["max_tokens"] == 321
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a file",
                "parameters": READ_FILE.parameters,
            },
        }
    ]
    assert body["messages"] == [
        {"role": "system", "content": "You plan."},
        {"role": "user", "content": "Fix the bug"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"content": "print(1)"}'},
        {"role": "system", "content": "Plan mode is active."},
    ]


async def test_no_tools_means_no_tools_field_and_placeholder_key(server: FakeModelServer) -> None:
    server.enqueue(ModelReply(text="hi"))
    provider = OpenAIProvider("m", base_url=server.openai_base_url, max_retries=0)
    try:
        request = ModelRequest("r", "build", [ChatMessage("user", "hi")], [])
        assert (await collect(provider.stream(request))).text == "hi"
    finally:
        await provider.aclose()
    body = server.requests[0].body
    assert "tools" not in body
    assert "temperature" not in body and "max_tokens" not in body
    assert server.requests[0].headers["authorization"] == "Bearer not-needed"


async def test_server_refusing_stream_options_is_retried_without_them(
    server: FakeModelServer, provider: OpenAIProvider
) -> None:
    server.enqueue(
        ErrorReply(400, "Unrecognized request argument supplied: stream_options"),
        ModelReply(text="fine"),
        ModelReply(text="again"),
    )
    assert (await collect(provider.stream(simple_request()))).text == "fine"
    assert (await collect(provider.stream(simple_request()))).text == "again"
    bodies = server.bodies()
    assert "stream_options" in bodies[0]
    assert "stream_options" not in bodies[1]
    assert "stream_options" not in bodies[2]


async def test_whole_tool_call_in_one_chunk_with_stop_reason(
    server: FakeModelServer, provider: OpenAIProvider
) -> None:
    # Some local servers send each tool call complete and say "stop".
    call = {
        "index": 0,
        "id": "call_x",
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "a"}'},
    }
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [call]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    body = "".join(
        f"data: {json.dumps({'id': 'c', 'object': 'chat.completion.chunk', **c})}\n\n"
        for c in chunks
    )
    server.enqueue(RawReply(body + "data: [DONE]\n\n"))
    summary = await collect(provider.stream(simple_request()))
    assert summary.tool_calls == [("call_x", "read_file", '{"path": "a"}')]
    assert summary.finish is not None and summary.finish.reason == "tool_calls"


async def test_401_is_auth(server: FakeModelServer, provider: OpenAIProvider) -> None:
    server.enqueue(ErrorReply(401, "Incorrect API key provided"))
    error = await expect_error(provider, "auth")
    assert "Incorrect API key provided" in error.message


async def test_403_is_auth(server: FakeModelServer, provider: OpenAIProvider) -> None:
    server.enqueue(ErrorReply(403, "forbidden"))
    await expect_error(provider, "auth")


async def test_429_is_rate_limit_with_retry_after(
    server: FakeModelServer, provider: OpenAIProvider
) -> None:
    server.enqueue(ErrorReply(429, "Rate limit reached", headers={"Retry-After": "7"}))
    error = await expect_error(provider, "rate_limit")
    assert error.retry_after == 7.0
    assert "Rate limit reached" in error.message


async def test_400_is_bad_request(server: FakeModelServer, provider: OpenAIProvider) -> None:
    server.enqueue(ErrorReply(400, "messages: invalid"))
    error = await expect_error(provider, "bad_request")
    assert "messages: invalid" in error.message
    assert len(server.requests) == 1  # not retried: the body did not name stream_options


async def test_404_is_a_wrong_url_unless_it_names_the_model(
    server: FakeModelServer, provider: OpenAIProvider
) -> None:
    from plan_lsp.providers.base import error_help

    server.enqueue(ErrorReply(404, "Not Found"))
    wrong_url = await expect_error(provider, "not_found")
    assert error_help(wrong_url) == ("provider_not_found", {"setting": "baseUrl"})
    server.enqueue(ErrorReply(404, "The model `gpt-9` does not exist"))
    no_model = await expect_error(provider, "model")
    assert error_help(no_model) == ("provider_model", {"setting": "model"})


async def test_500_is_server(server: FakeModelServer, provider: OpenAIProvider) -> None:
    server.enqueue(ErrorReply(500, "internal"))
    await expect_error(provider, "server")


async def test_unparsable_stream_is_malformed(
    server: FakeModelServer, provider: OpenAIProvider
) -> None:
    server.enqueue(RawReply('data: {"choices": [{"index": 0, "delta": {"content": "a"\n\n'))
    error = await expect_error(provider, "malformed_stream")
    assert "unparsable" in error.message


async def test_stream_without_finish_reason_is_malformed(
    server: FakeModelServer, provider: OpenAIProvider
) -> None:
    chunk = {"id": "c", "choices": [{"index": 0, "delta": {"content": "half"}}]}
    server.enqueue(RawReply(f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n"))
    await expect_error(provider, "malformed_stream")


async def test_error_object_inside_stream_is_server(
    server: FakeModelServer, provider: OpenAIProvider
) -> None:
    server.enqueue(RawReply('data: {"error": {"message": "model crashed"}}\n\n'))
    error = await expect_error(provider, "server")
    assert "model crashed" in error.message


async def test_dropped_connection_is_connection(
    server: FakeModelServer, provider: OpenAIProvider
) -> None:
    chunk = {"id": "c", "choices": [{"index": 0, "delta": {"content": "hal"}}]}
    server.enqueue(DropConnection(partial=f"data: {json.dumps(chunk)}\n\n"))
    await expect_error(provider, "connection")


async def test_connection_refused_is_connection() -> None:
    port = unused_local_port()
    provider = OpenAIProvider("m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0)
    try:
        error = await expect_error(provider, "connection")
    finally:
        await provider.aclose()
    assert f"127.0.0.1:{port}" in error.message


async def test_factory_reads_api_key_from_environment(
    server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    server.enqueue(ModelReply(text="hi"))
    provider = make_provider("openai", model="m", base_url=server.openai_base_url)
    assert isinstance(provider, OpenAIProvider)
    try:
        await collect(provider.stream(simple_request()))
    finally:
        await provider.aclose()
    assert server.requests[0].headers["authorization"] == "Bearer sk-from-env"
    assert server.requests[0].body["model"] == "m"


async def test_cancelling_mid_stream_propagates_and_frees_the_provider(
    server: FakeModelServer, provider: OpenAIProvider
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
