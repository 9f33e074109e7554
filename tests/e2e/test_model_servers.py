"""Model servers as users run them, through the real server process: a strict chat template
(Gemma 3's, rendered by Jinja), a response cut at the token limit mid-call, and the
connection test's honest advice (a template that refuses roles, llama.cpp's `/props`, a
context window larger than the server's, a reverse proxy's HTML 502)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.chat_templates import ChatTemplate
from tests.e2e.scripts import sample_project
from tests.fake_model_servers import ErrorReply, FakeModelServer, ModelReply, ReplyToolCall
from tests.lsp_harness import running_server


def _args(server: FakeModelServer, *more: str) -> list[str]:
    return ["--provider", "openai", "--base-url", server.openai_base_url, "--model", "fake-model",
            "--plan-shell", "classified", *more]  # fmt: skip


def _llama_props(n_ctx: int = 8192, tools: bool | None = True) -> dict[str, Any]:
    props: dict[str, Any] = {"default_generation_settings": {"n_ctx": n_ctx}, "total_slots": 1}
    if tools is not None:
        props["chat_template_caps"] = {"supports_tools": tools, "supports_tool_calls": tools}
    return props


async def test_plan_mode_prompts_through_gemma_3s_template(tmp_path: Path) -> None:
    """Two plan-mode prompts against a server whose chat template is Gemma 3's own: the
    server refuses the tool call's turn once, and from then on every request renders; the runs end
    without an error and the model was shown each prompt, its reminder and the file read."""
    ws = sample_project(tmp_path / "ws")
    template = ChatTemplate.load("gemma-3")
    with FakeModelServer() as server:
        server.gate = template.gate
        server.enqueue(
            ModelReply(tool_calls=[ReplyToolCall("read_file", {"path": "hello.py"})]),
            ModelReply(text="It prints hi."),
            ModelReply(text="Nothing else to do."),
        )
        async with running_server([ws], *_args(server)) as ed:
            first = await ed.request("planLsp/prompt", {"text": "What does hello.py do?"})
            second = await ed.request("planLsp/prompt", {"text": "Anything else?"})
            errors = ed.updates_of("error")
    assert first["stopReason"] == "end_turn" and second["stopReason"] == "end_turn", errors
    assert errors == []
    # The assistant's tool call (content null) then the tool role: Gemma's checks refuse it.
    assert len(template.refused) == 1
    assert "Invalid content type" in template.refused[0] or "alternate" in template.refused[0]
    assert len(template.rendered) == 3
    last = template.rendered[-1]
    for text in ("What does hello.py do?", "Anything else?", "print('hi')", "It prints hi."):
        assert text in last, text
    assert "<start_of_turn>tool" not in last


async def test_complete_calls_of_a_cut_off_response_run(tmp_path: Path) -> None:
    """A response cut at the token limit in its second call: the first call, whose arguments
    are complete, runs; only the cut one is refused as cut off."""
    ws = sample_project(tmp_path / "ws")
    with FakeModelServer() as server:
        server.enqueue(
            ModelReply(
                tool_calls=[
                    ReplyToolCall("read_file", {"path": "hello.py"}),
                    ReplyToolCall("read_file", '{"path": "READ'),
                ],
                finish_reason="length",
            ),
            ModelReply(text="done"),
        )
        async with running_server([ws], *_args(server)) as ed:
            result = await ed.request("planLsp/prompt", {"text": "Read the files"})
            results = ed.updates_of("toolResult")
            errors = [e["message"] for e in ed.updates_of("error")]
    assert result["stopReason"] == "end_turn"
    assert [(r["tool"], r["isError"]) for r in results] == [("read_file", False)]
    assert "print('hi')" in results[0]["content"]
    assert len(errors) == 1 and "cut off at the response's token limit" in errors[0]
    tool_results = [m for m in server.requests[-1].body["messages"] if m["role"] == "tool"]
    assert "print('hi')" in tool_results[0]["content"]
    assert "arguments_cut_off" in tool_results[1]["content"]


async def test_connection_test_learns_a_strict_template(tmp_path: Path) -> None:
    """The connection test sends a conversation shaped like a real request; Mistral's
    template refuses its system prompt, the test says so and what plan-lsp does about it, and
    the next prompt goes out in user and assistant turns at once."""
    ws = sample_project(tmp_path / "ws")
    template = ChatTemplate.load("mistral-instruct")
    with FakeModelServer() as server:
        server.gate = template.gate
        server.enqueue(ModelReply(tool_calls=[ReplyToolCall("ping", {})]), ModelReply(text="hi"))
        async with running_server([ws], *_args(server)) as ed:
            result = await ed.request("planLsp/testConnection", {})
            prompt = await ed.request("planLsp/prompt", {"text": "hello"})
    assert result["ok"] is True, result
    assert "Conversation roles must alternate" in result["message"]
    assert "only user and assistant turns" in result["message"]
    probe = server.requests[0].body["messages"]
    assert [m["role"] for m in probe] == ["system", "user", "assistant", "tool", "user"]
    assert prompt["stopReason"] == "end_turn"
    assert len(template.refused) == 1 and len(template.rendered) == 2


async def test_connection_test_with_roles_forced_native_names_the_setting(tmp_path: Path) -> None:
    ws = sample_project(tmp_path / "ws")
    (ws / ".plan-lsp").mkdir()
    with FakeModelServer() as server:
        server.gate = ChatTemplate.load("llama-2-chat").gate
        async with running_server([ws], *_args(server), init_options={"chatRoles": "native"}) as ed:
            result = await ed.request("planLsp/testConnection", {})
    assert result["ok"] is False and result["code"] == "provider_failed", result
    # Llama 2's template fails on the tool-call turn's null content before its role check.
    assert "'None' has no attribute 'strip'" in result["message"]
    assert 'set chat_roles to "user_assistant"' in result["message"]


async def test_connection_test_advice_follows_llama_cpps_props(tmp_path: Path) -> None:
    """llama.cpp's `/props` says whether the loaded template supports tools: with Jinja on
    and a template without tools, the fix is the template (not --jinja); with no template
    capabilities at all, Jinja is off."""
    ws = sample_project(tmp_path / "ws")
    with FakeModelServer() as server:
        async with running_server([ws], *_args(server)) as ed:
            server.props = _llama_props(tools=False)
            server.enqueue(ModelReply(text="pong"))
            no_tools = await ed.request("planLsp/testConnection", {})
            server.props = _llama_props(tools=None)
            server.enqueue(ModelReply(text="pong"))
            no_jinja = await ed.request("planLsp/testConnection", {})
    assert no_tools["ok"] is False and no_tools["code"] == "provider_no_tools"
    assert "--chat-template-file" in no_tools["message"]
    assert "start llama-server with --jinja" not in no_tools["message"]
    assert no_jinja["code"] == "provider_no_tools"
    assert "Start llama-server with --jinja" in no_jinja["message"]


async def test_a_context_window_above_the_servers_is_named(tmp_path: Path) -> None:
    """Configured 65,536 tokens, llama-server runs 8,192: the connection test names
    context_window; so does a prompt the server refuses as too large for its context."""
    ws = sample_project(tmp_path / "ws")
    with FakeModelServer() as server:
        server.props = _llama_props(n_ctx=8192)
        args = _args(server, "--context-window", "65536")
        async with running_server([ws], *args) as ed:
            result = await ed.request("planLsp/testConnection", {})
            body = (
                '{"error": {"code": 400, "message": "the request exceeds the available context'
                ' size, try increasing it", "type": "exceed_context_size_error",'
                ' "n_prompt_tokens": 9000, "n_ctx": 8192}}'
            )
            server.enqueue(ErrorReply(400, body=body))
            await ed.request("planLsp/prompt", {"text": "hello"})
            error = ed.updates_of("error")[-1]
    assert result["ok"] is False and "context_window" in result["message"], result
    assert "8,192" in result["message"] and "65,536" in result["message"]
    assert "context_window" in error["message"] and "(8192)" in error["message"]


async def test_a_proxys_html_502_is_reduced_to_its_title(tmp_path: Path) -> None:
    ws = sample_project(tmp_path / "ws")
    page = (
        "<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title>"
        "<style>body{font:1em sans-serif}</style></head><body><h1>502 Bad Gateway</h1>"
        + "<p>nginx</p>" * 200
        + "</body></html>"
    )
    with FakeModelServer() as server:
        async with running_server([ws], *_args(server)) as ed:
            for _ in range(3):  # the SDK's retries
                server.enqueue(ErrorReply(502, body=page, content_type="text/html"))
            await ed.request("planLsp/prompt", {"text": "hello"})
            error = ed.updates_of("error")[-1]["message"]
    assert "HTTP 502" in error and "'502 Bad Gateway'" in error
    assert "<" not in error and len(error) < 300, error
