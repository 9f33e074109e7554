"""Messages every chat template accepts: the OpenAI-compatible provider against loopback
servers that render the published chat templates of Gemma 3, Mistral 7B Instruct and Llama 2
chat with a real Jinja engine (tests/chat_templates.py) and answer HTTP 400 with the template's
message when it refuses the conversation, as llama.cpp and vLLM do."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from plan_lsp.providers.base import ChatMessage, ModelRequest, ProviderError, ToolCall, ToolSpec
from plan_lsp.providers.openai_provider import OpenAIProvider
from plan_lsp.providers.shaping import (
    merge_turns,
    openai_messages,
    refuses_roles,
    user_assistant_turns,
)
from tests.chat_templates import NAMES, ChatTemplate
from tests.fake_model_servers import FakeModelServer, ModelReply, ReplyToolCall, collect

READ = ToolSpec("read_file", "Read a file", {"type": "object", "properties": {}})
SYSTEM = ChatMessage("system", "You are plan-lsp's agent.", meta={"kind": "system"})
REMINDER = ChatMessage("user", "Plan mode is active.", meta={"ephemeral": True})
PINNED = ChatMessage("user", "[Kept verbatim]", meta={"ephemeral": True, "pinned": True})


def _history(steps: int) -> list[ChatMessage]:
    """A stored conversation: the prompt, then `steps` tool calls and their results."""
    stored = [ChatMessage("user", "Fix the greeting")]
    for i in range(steps):
        call = ToolCall(f"call_{i}", "read_file", f'{{"path": "f{i}.py"}}')
        stored.append(ChatMessage("assistant", "" if i % 2 else "Looking.", tool_calls=[call]))
        stored.append(ChatMessage("tool", f"contents {i}", tool_call_id=call.id, name="read_file"))
    return stored


def _request(stored: list[ChatMessage], *after: ChatMessage) -> ModelRequest:
    return ModelRequest("r", "plan", [SYSTEM, *stored, *after], [READ])


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with FakeModelServer() as s:
        yield s


@pytest.mark.parametrize("name", NAMES)
def test_the_templates_refuse_what_was_sent_before(name: str) -> None:
    """The loopback templates are strict: two user messages in a row (a prompt and its
    reminder) and a tool result in its own role are refused with the template's words."""
    template = ChatTemplate.load(name)
    for messages in (
        [{"role": "user", "content": "hi"}, {"role": "user", "content": "Plan mode."}],
        openai_messages([*_history(1)[:2], ChatMessage("tool", "x", tool_call_id="call_0")]),
    ):
        with pytest.raises(Exception, match=r"alternate|Invalid content|roles|NoneType|None"):
            template.render(messages)
    assert "roles must alternate" in str(_refusal(template, [{"role": "user"}] * 2))


def _refusal(template: ChatTemplate, messages: list[dict[str, str]]) -> Exception:
    try:
        template.render([{**m, "content": "x"} for m in messages])
    except Exception as exc:
        return exc
    raise AssertionError("rendered")


@pytest.mark.parametrize("name", NAMES)
async def test_a_plan_mode_run_renders_through_each_template(
    server: FakeModelServer, name: str
) -> None:
    """Four steps of a plan-mode run (prompt + pinned context + reminder, then tool calls and
    results) with chat_roles "auto": the first refusal switches the provider to user and
    assistant turns, every later request renders on the first try, and what the model is
    shown holds the system prompt, the reminder and every tool result."""
    template = ChatTemplate.load(name)
    server.gate = template.gate
    provider = OpenAIProvider("m", base_url=server.openai_base_url, api_key="k", max_retries=0)
    try:
        for step in range(4):
            server.enqueue(ModelReply(tool_calls=[ReplyToolCall("read_file", {"path": "a"})]))
            summary = await collect(provider.stream(_request(_history(step), PINNED, REMINDER)))
            assert summary.tool_calls[0][1] == "read_file"
    finally:
        await provider.aclose()
    assert provider.user_assistant is True
    assert len(template.refused) == 1 and "chat template error" in template.refused[0]
    assert len(template.rendered) == 4
    last = template.rendered[-1]
    for text in ("You are plan-lsp's agent.", "Plan mode is active.", "[Kept verbatim]"):
        assert last.count(text) == 1, (text, last)
    for i in range(3):
        assert f"contents {i}" in last and f'"path": "f{i}.py"' in last


@pytest.mark.parametrize("name", NAMES)
async def test_native_roles_forced_names_the_templates_refusal(
    server: FakeModelServer, name: str
) -> None:
    server.gate = ChatTemplate.load(name).gate
    provider = OpenAIProvider(
        "m", base_url=server.openai_base_url, api_key="k", max_retries=0, chat_roles="native"
    )
    try:
        with pytest.raises(ProviderError) as caught:
            await collect(provider.stream(_request(_history(2), REMINDER)))
    finally:
        await provider.aclose()
    assert caught.value.kind == "bad_request" and "HTTP 400" in caught.value.message
    assert "chat template error" in caught.value.message
    assert provider.user_assistant is False


async def test_consecutive_user_messages_are_one_turn_in_native_roles(
    server: FakeModelServer,
) -> None:
    """Native roles keep `system` and `tool`, but the prompt, the pinned context and the
    reminder go out as one user turn (a template allowing a system prompt renders it)."""
    template = ChatTemplate.load("gemma-3")
    server.gate = template.gate
    server.enqueue(ModelReply(text="ok"))
    provider = OpenAIProvider(
        "m", base_url=server.openai_base_url, api_key="k", max_retries=0, chat_roles="native"
    )
    try:
        await collect(provider.stream(_request(_history(0), PINNED, REMINDER)))
    finally:
        await provider.aclose()
    sent = server.requests[0].body["messages"]
    assert [m["role"] for m in sent] == ["system", "user"]
    assert sent[1]["content"] == "Fix the greeting\n\n[Kept verbatim]\n\nPlan mode is active."
    assert template.refused == [] and len(template.rendered) == 1


@pytest.mark.parametrize("user_assistant", [False, True])
def test_shaping_keeps_the_history_a_prefix(user_assistant: bool) -> None:
    """From one step to the next, only the last turn of a request changes (the ephemeral
    context merged into it): every earlier turn is sent byte for byte again, and the
    messages given are never changed."""
    for steps in range(4):
        before = _request(_history(steps), PINNED, REMINDER).messages
        snapshot = [m.to_json() for m in before]
        now = openai_messages(before, user_assistant)
        later = openai_messages(_request(_history(steps + 1), REMINDER).messages, user_assistant)
        assert later[: len(now) - 1] == now[:-1]
        assert [m.to_json() for m in before] == snapshot


def test_user_assistant_turns_alternate_and_start_with_the_user() -> None:
    messages = [SYSTEM, *_history(3), PINNED, REMINDER]
    turns = user_assistant_turns(messages)
    assert [t.role for t in turns] == ["user", "assistant"] * 3 + ["user"]
    assert turns[0].content.startswith("You are plan-lsp's agent.\n\nFix the greeting")
    assert '{"tool_calls": [{"name": "read_file", "arguments": {"path": "f0.py"}' in (
        turns[1].content
    )
    assert turns[-1].content.startswith('{"tool_response": {"tool": "read_file"')
    assert turns[-1].content.endswith("[Kept verbatim]\n\nPlan mode is active.")
    merged = merge_turns([ChatMessage("user", "a"), ChatMessage("user", ""), REMINDER])
    assert [(m.role, m.content) for m in merged] == [("user", "a\n\nPlan mode is active.")]


@pytest.mark.parametrize(
    ("detail", "refused"),
    [
        ("Conversation roles must alternate user/assistant/user/assistant/...", True),
        ("Only user and assistant roles are supported!", True),
        ("System role not supported", True),
        ("Invalid content type", True),
        ("chat template error: 'None' has no attribute 'strip'", True),
        ("the request exceeds the available context size", False),
        ("model 'x' not found", False),
    ],
)
def test_role_refusals_are_recognised(detail: str, refused: bool) -> None:
    assert refuses_roles(detail) is refused
