"""The connection test of an OpenAI-compatible server: does it answer, serve the model, hold
a conversation shaped like the agent's, and call tools — and if not, what is true of that
server and what fixes it (llama.cpp's `GET /props` tells its context and whether the loaded
chat template supports tools)."""

from __future__ import annotations

from typing import Any

from plan_lsp.providers.base import ChatMessage, ProviderError, ToolCall
from plan_lsp.providers.http_errors import (
    error_detail,
    sdk_failure,
    served_model_sentence,
    served_models,
)
from plan_lsp.providers.shaping import openai_messages, refuses_roles
from plan_lsp.providers.windows import server_props, window_from_llama_props

_PING_TOOL: dict[str, Any] = {
    "name": "ping",
    "description": "Answers pong. Call it when asked to.",
    "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
}

# Shaped like a real request of the agent's (a system prompt, a prompt, a tool call and its
# result, the user's next words): a chat template that refuses what the agent sends refuses it.
_CONVERSATION = [
    ChatMessage(role="system", content="You are a connection test. Call tools when asked."),
    ChatMessage(role="user", content="Call the tool `ping`."),
    ChatMessage(role="assistant", tool_calls=[ToolCall("call_test_0", "ping", "{}")]),
    ChatMessage(role="tool", content="pong", tool_call_id="call_test_0", name="ping"),
    ChatMessage(role="user", content="Call the tool `ping` once more, now."),
]
_SHAPED = (
    "a conversation shaped like plan-lsp's requests (system, user, tool call, tool result, user)"
)


async def check_openai(provider: Any) -> str:
    """A sentence saying what works; raises ProviderError naming what does not, and its fix."""
    import openai  # loaded by the provider already; at module level: ~1 s at import

    server = f"the model server at {provider.endpoint}"
    served = await served_models(openai, provider.client, server)
    sentence = served_model_sentence(server, provider.model, served)
    props = await server_props(provider.base_url, provider.api_key)
    configured = provider.configured_window
    theirs = window_from_llama_props(props) or await provider.context_window()
    if configured is not None and theirs is not None and configured > theirs:
        raise ProviderError(
            "bad_request",
            f"{server} runs the model {provider.model!r} with a context of {theirs:,} tokens, "
            f"but context_window is set to {configured:,}: long conversations would be "
            f"refused. Set context_window to at most {theirs:,} (or remove it), or give the "
            "server a larger context (llama-server: -c / --ctx-size).",
        )
    return sentence + await _tool_calls(openai, provider, server, props)


async def _tool_calls(openai: Any, provider: Any, server: str, props: dict[str, Any] | None) -> str:
    """One small request offering one tool the model must call. A template refusing the
    roles is named with its words; with `chat_roles = "auto"` the request is tried again with
    user and assistant turns only, and the provider keeps that shape. Returns the rest of
    the test's sentence."""
    choice, refusal = "required", None
    while True:
        try:
            params: dict[str, Any] = {
                "model": provider.model,
                "messages": openai_messages(_CONVERSATION, provider.user_assistant),
                "tools": [{"type": "function", "function": _PING_TOOL}],
                "tool_choice": choice,
                "max_tokens": 64,
                "stream": False,
            }
            answer = await provider.client.chat.completions.create(**params)
            break
        except openai.BadRequestError as exc:
            detail = error_detail(exc.body) or str(exc)
            if choice == "required" and "tool_choice" in detail:
                choice = "auto"  # a server that knows no "required"
            elif refuses_roles(detail) and not provider.user_assistant:
                refusal = detail
                if provider.chat_roles != "auto":
                    raise ProviderError(
                        "bad_request",
                        f"{server} refused {_SHAPED}: {detail}. Its chat template takes only "
                        'user and assistant turns: set chat_roles to "user_assistant" (or "auto").',
                    ) from exc
                provider.user_assistant = True
            elif refusal is not None:
                raise ProviderError(
                    "bad_request",
                    f"{server} refused {_SHAPED}: {refusal}; with only user and assistant "
                    f"turns it refused it too: {detail}. Its chat template cannot hold an "
                    "agent's conversation: use another model or chat template.",
                ) from exc
            else:
                raise sdk_failure(openai, exc, server) from exc
        except Exception as exc:
            raise sdk_failure(openai, exc, server) from exc
    choices = getattr(answer, "choices", None) or []
    if not getattr(getattr(choices[0], "message", None) if choices else None, "tool_calls", None):
        raise ProviderError("no_tools", _no_tools(server, provider.model, props))
    if refusal is None:
        return ", and it calls tools"
    return (
        f", and it calls tools. Its chat template refused the system and tool roles "
        f'({refusal}), so plan-lsp sends it only user and assistant turns (chat_roles "auto"; '
        'set "user_assistant" to skip this test)'
    )


def _no_tools(server: str, model: str, props: dict[str, Any] | None) -> str:
    """What is true of a server that ignored the tool, and its fix: llama.cpp reports its
    template's capabilities in `/props` only when its Jinja templates are on."""
    head = f"{server} answers, but the model {model!r} ignored the tool it was offered"
    caps = props.get("chat_template_caps") if props is not None else None
    if isinstance(caps, dict) and False in (
        caps.get("supports_tools"),
        caps.get("supports_tool_calls"),
    ):
        return (
            f"{head}. llama-server reports (GET /props) that the chat template it loaded has "
            "no tool support; its Jinja templates are already on, so the fix is the template: "
            "start llama-server with --chat-template-file FILE holding a template with tools "
            "(or use a model whose own template has them)."
        )
    if isinstance(caps, dict):
        return (
            f"{head}, although llama-server reports (GET /props) that its chat template "
            "supports tools: the model itself does not call them. Use a model trained for it."
        )
    if props is not None:
        return (
            f"{head}: llama-server reports no chat template capabilities (GET /props), so its "
            "Jinja templates are off. Start llama-server with --jinja (and a model whose chat "
            "template has tools)."
        )
    return (
        f"{head}: its model or chat template has no tool support, and plan-lsp works through "
        "tool calls. Use a model with tool calling, or a chat template with tools (llama.cpp: "
        "start llama-server with --jinja; Ollama: a model tagged 'tools')."
    )
