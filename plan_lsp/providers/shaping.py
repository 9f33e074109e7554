"""Conversations in a shape every chat template accepts (`chat_roles`, docs/configuration.md).

Many models' templates (Gemma, Mistral, Llama 2, ...) demand strictly alternating user and
assistant turns, some know no `system` or `tool` role. `native` merges consecutive user (or
system) messages; `user_assistant` also opens the first user turn with the system prompt and
writes tool calls and results as text, in llama.cpp's JSON form. Shaping never changes a
message and maps equal lists to equal turns: an unchanged history stays an unchanged prefix
of every request (what prompt caches need).
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from plan_lsp.providers.base import ChatMessage, ProviderError, replayable_arguments

ChatRoles = Literal["auto", "native", "user_assistant"]

_JOIN = "\n\n"


def merge_turns(messages: list[ChatMessage]) -> list[ChatMessage]:
    """Consecutive messages of one role (user, system, assistant) as one message; tool
    results stay one message per call. The given messages are not changed."""
    out: list[ChatMessage] = []
    for message in messages:
        last = out[-1] if out else None
        if last is None or last.role != message.role or message.role == "tool":
            out.append(message)
            continue
        parts = [p for p in (last.content, message.content) if p]
        out[-1] = ChatMessage(
            role=last.role,
            content=_JOIN.join(parts),
            tool_calls=[*last.tool_calls, *message.tool_calls],
            meta=dict(last.meta),
        )
    return out


def _calls_text(message: ChatMessage) -> str:
    calls = [
        {"name": c.name, "arguments": json.loads(replayable_arguments(c.arguments)), "id": c.id}
        for c in message.tool_calls
    ]
    text = json.dumps({"tool_calls": calls}, ensure_ascii=False)
    return _JOIN.join(p for p in (message.content, text) if p)


def _result_text(message: ChatMessage) -> str:
    response = {"tool": message.name, "content": message.content, "id": message.tool_call_id}
    return json.dumps({"tool_response": response}, ensure_ascii=False)


def user_assistant_turns(messages: list[ChatMessage]) -> list[ChatMessage]:
    """Only user and assistant turns, alternating, the first a user turn."""
    lead = 0
    while lead < len(messages) and messages[lead].role == "system":
        lead += 1
    system = [m.content for m in messages[:lead] if m.content]
    turns: list[ChatMessage] = []
    for message in messages[lead:]:
        if message.role == "system":
            turns.append(ChatMessage(role="user", content=message.content))
        elif message.role == "tool":
            turns.append(ChatMessage(role="user", content=_result_text(message)))
        elif message.role == "assistant" and message.tool_calls:
            turns.append(ChatMessage(role="assistant", content=_calls_text(message)))
        else:
            turns.append(message)
    if system:
        prefix = ChatMessage(role="user", content=_JOIN.join(system))
        turns.insert(0, prefix)
    turns = merge_turns(turns)
    if turns and turns[0].role != "user":
        turns.insert(0, ChatMessage(role="user", content="(continued)"))
    return turns


# What model servers say when a chat template refuses a conversation's roles (the messages of
# Gemma's, Mistral's and Llama 2's templates; llama.cpp's and vLLM's own wording), or fails on
# the null content of an assistant's tool-call turn (a template that knows no tool calls).
_ROLE_REFUSAL = re.compile(
    r"roles must alternate|only user and assistant roles|system role not supported|"
    r"unexpected message role|tool role|role .{0,20}not supported|invalid content type|"
    r"unable to generate parser for this template|'none' has no attribute|nonetype",
    re.IGNORECASE,
)


def refuses_roles(detail: str) -> bool:
    """Whether a server's 400 message says its chat template refused the roles sent."""
    return bool(_ROLE_REFUSAL.search(detail))


def openai_messages(
    messages: list[ChatMessage], user_assistant: bool = False
) -> list[dict[str, Any]]:
    """ChatMessages in chat-completions form, shaped for strict chat templates
    (providers/shaping.py); `meta` and `name` stay on our side."""
    out: list[dict[str, Any]] = []
    shaped = user_assistant_turns(messages) if user_assistant else merge_turns(messages)
    for message in shaped:
        if message.role == "tool":
            if message.tool_call_id is None:
                raise ProviderError("bad_request", "a tool result message has no tool_call_id")
            out.append(
                {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
            )
        elif message.role == "assistant" and message.tool_calls:
            out.append(
                {
                    "role": "assistant",
                    # null (not "") beside tool calls: some servers reject empty content.
                    "content": message.content or None,
                    "tool_calls": [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {
                                "name": call.name,
                                "arguments": replayable_arguments(call.arguments),
                            },
                        }
                        for call in message.tool_calls
                    ],
                }
            )
        else:
            out.append({"role": message.role, "content": message.content})
    return out
