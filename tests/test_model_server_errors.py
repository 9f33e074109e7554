"""Model servers' answers as a user can act on them: HTML error pages reduced to their title,
a request too large for the server's context naming `context_window`, the server's own window
read from `/v1/models`, and cached input tokens counted from every server that reports them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from plan_lsp.providers.anthropic_provider import AnthropicProvider
from plan_lsp.providers.base import ChatMessage, ModelRequest
from plan_lsp.providers.http_errors import html_title, status_error
from plan_lsp.providers.openai_provider import OpenAIProvider
from plan_lsp.providers.windows import window_from_models
from tests.fake_model_servers import FakeModelServer, ModelReply, collect

SERVER = "the model server at http://127.0.0.1:1/v1"
PAGE = (
    "<!DOCTYPE html>\n<html>\n<head><title>502 Bad\n Gateway &amp; co</title></head>\n"
    "<body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center>"
    + "<!-- padding -->" * 100
    + "</body></html>"
)


def test_an_html_error_page_is_its_status_and_title() -> None:
    error = status_error(SERVER, 502, PAGE, {})
    assert error.kind == "server"
    assert error.message == (
        f"{SERVER} failed (HTTP 502): an HTML page titled '502 Bad Gateway & co' "
        "(not an API's answer)"
    )
    assert html_title("<html><body>no title</body></html>") == (
        "an HTML page (not an API's answer)"
    )
    assert html_title("plain text error") is None
    assert status_error(SERVER, 500, "plain text error", {}).message.endswith("plain text error")


def test_a_request_too_large_for_the_servers_context_names_context_window() -> None:
    body = {
        "error": {
            "code": 400,
            "message": "the request exceeds the available context size, try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": 9000,
            "n_ctx": 8192,
        }
    }
    error = status_error(SERVER, 400, body, {})
    assert error.kind == "bad_request"
    assert "(8,192 tokens)" in error.message and "context_window" in error.message
    assert "at most the server's context (8192)" in error.message
    vllm = {"message": "This model's maximum context length is 4096 tokens. However, ..."}
    assert "context_window" in status_error(SERVER, 400, vllm, {}).message
    assert "context_window" not in status_error(SERVER, 400, {"message": "bad tool"}, {}).message


def test_the_window_of_v1_models_meta() -> None:
    listing = {"data": [{"id": "m", "meta": {"n_ctx_train": 131072, "n_vocab": 1}}]}
    assert window_from_models(listing, "m") == 131072
    vllm = {"data": [{"id": "m", "max_model_len": 4096, "meta": {"n_ctx_train": 8}}]}
    assert window_from_models(vllm, "m") == 4096


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with FakeModelServer() as s:
        yield s


REQUEST = ModelRequest("r", "plan", [ChatMessage("user", "hi")], [])


@pytest.mark.parametrize(
    ("reply", "cached"),
    [
        (ModelReply(text="a", input_tokens=900, cache_read=800), 800),  # OpenAI, vLLM
        (ModelReply(text="a", input_tokens=900, timings={"cache_n": 700, "prompt_n": 200}), 700),
        (ModelReply(text="a", input_tokens=900), 0),
    ],
)
async def test_openai_compatible_cached_tokens_are_counted(
    server: FakeModelServer, reply: ModelReply, cached: int
) -> None:
    server.enqueue(reply)
    provider = OpenAIProvider("m", base_url=server.openai_base_url, api_key="k", max_retries=0)
    try:
        summary = await collect(provider.stream(REQUEST))
    finally:
        await provider.aclose()
    assert summary.finish is not None
    assert summary.finish.usage.input_tokens == 900
    assert summary.finish.usage.cached_input_tokens == cached


async def test_anthropic_cache_reads_and_writes_are_counted(server: FakeModelServer) -> None:
    server.enqueue(ModelReply(text="a", input_tokens=50, cache_read=800, cache_write=150))
    provider = AnthropicProvider(
        "m", base_url=server.anthropic_base_url, api_key="k", max_retries=0
    )
    try:
        summary = await collect(provider.stream(REQUEST))
    finally:
        await provider.aclose()
    assert summary.finish is not None
    assert summary.finish.usage.input_tokens == 1000
    assert summary.finish.usage.cached_input_tokens == 800
