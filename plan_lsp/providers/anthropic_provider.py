"""The `anthropic` provider: the Messages API through the official `anthropic` SDK.

The SDK is imported when a provider is built, never when `plan_lsp.providers` is imported.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from plan_lsp.providers.base import (
    ChatMessage,
    Finish,
    ModelRequest,
    ProviderError,
    StreamEvent,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallStart,
    Usage,
    replayable_arguments,
)
from plan_lsp.providers.http_errors import (
    SdkProvider,
    connection_error,
    sdk_failure,
    served_model_sentence,
    served_models,
    status_error,
)

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

DEFAULT_MAX_TOKENS = 4096

# Error types the API can send inside a stream (an `error` event) → an HTTP-like status.
_STREAM_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}

_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "error",
}


# Prompt-cache breakpoints Anthropic allows in one request.
MAX_CACHE_BREAKPOINTS = 4
_CACHE = {"type": "ephemeral"}


def anthropic_turns(
    messages: list[ChatMessage],
) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    """The system prompt (the leading system messages), the Messages-API turns (a later
    system message is a text block of a user turn; blocks of one role merged: the API wants
    alternating turns, every tool_result right after its tool_use), and per user turn its
    last block of a stored (not ephemeral) message: where `mark_cache` may put a breakpoint."""
    system_parts: list[str] = []
    turns: list[dict[str, Any]] = []
    seen_conversation = False
    anchors: dict[int, dict[str, Any]] = {}  # user turn index -> its last stored block

    def add(role: str, blocks: list[dict[str, Any]], stable: bool = False) -> None:
        if not blocks:
            return
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
        if stable and role == "user":
            anchors[len(turns) - 1] = blocks[-1]

    for message in messages:
        stable = not message.meta.get("ephemeral")
        if message.role == "system" and not seen_conversation:
            if message.content:
                system_parts.append(message.content)
            continue
        seen_conversation = True
        if message.role in ("system", "user"):
            text = [{"type": "text", "text": message.content}] if message.content else []
            add("user", text, stable)
        elif message.role == "tool":
            if message.tool_call_id is None:
                raise ProviderError("bad_request", "a tool result message has no tool_call_id")
            add(
                "user",
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": message.tool_call_id,
                        "content": message.content,
                    }
                ],
                stable,
            )
        else:
            blocks: list[dict[str, Any]] = []
            if message.content:
                blocks.append({"type": "text", "text": message.content})
            blocks.extend(
                {
                    "type": "tool_use",
                    "id": call.id,
                    "name": call.name,
                    "input": json.loads(replayable_arguments(call.arguments)),
                }
                for call in message.tool_calls
            )
            add("assistant", blocks)
    return "\n\n".join(system_parts), turns, [anchors[i] for i in sorted(anchors)]


# A fixed breakpoint every this many user turns: Anthropic finds an entry up to 20 blocks
# before a breakpoint, and a step adds two or three blocks.
GRID_TURNS = 6


def mark_cache(params: dict[str, Any], anchors: list[dict[str, Any]]) -> None:
    """Prompt-cache breakpoints (`cache_control`), at most MAX_CACHE_BREAKPOINTS: the end of
    the tool definitions and system prompt (the same on every request of a mode), and the
    last stored block of the last two user turns: the newest is written for the next
    request, the one before is what the previous request wrote (read now). One more sits
    on a grid of user turns that does not move from step to step: when pruning rewrites the
    newer part of the history, what comes before it is still read back. Ephemeral context
    (reminders, pinned context) comes after them all and is never cached."""
    budget = MAX_CACHE_BREAKPOINTS
    if params.get("system"):
        params["system"] = [{"type": "text", "text": params["system"], "cache_control": _CACHE}]
        budget -= 1
    elif params.get("tools"):
        params["tools"][-1]["cache_control"] = _CACHE
        budget -= 1
    chosen = anchors[-2:]
    if anchors:
        grid = anchors[(len(anchors) - 1) // GRID_TURNS * GRID_TURNS]
        if all(grid is not block for block in chosen):
            chosen.insert(0, grid)
    for block in chosen[len(chosen) - min(budget, len(chosen)) :]:
        block["cache_control"] = _CACHE


class AnthropicProvider(SdkProvider):
    name = "anthropic"
    sdk_client = "AsyncAnthropic"
    client: AsyncAnthropic

    def request_params(self, request: ModelRequest) -> dict[str, Any]:
        system, turns, anchors = anthropic_turns(request.messages)
        temperature, max_tokens = self.settings(request)
        params: dict[str, Any] = {
            "model": request.model or self.model,
            "max_tokens": max_tokens if max_tokens is not None else DEFAULT_MAX_TOKENS,
            "messages": turns,
            "stream": True,
        }
        if system:
            params["system"] = system
        if request.tools:
            params["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in request.tools
            ]
        mark_cache(params, anchors)
        if temperature is not None:
            # Not a typed argument of every SDK release; the API accepts it in the body.
            params["extra_body"] = {"temperature": temperature}
        return params

    async def context_window(self) -> int | None:
        return None  # the Messages API reports none; the table knows Anthropic's models

    async def check(self) -> str:
        import anthropic  # loaded by __init__ already; at module level: ~1 s at import

        server = f"the model server at {self.endpoint}"
        served = await served_models(anthropic, self.client, server)
        return served_model_sentence(server, self.model, served)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        import anthropic  # loaded by __init__ already; at module level: ~1 s at import
        import httpx2  # the SDK's HTTP client, loaded with it

        params = self.request_params(request)
        server = f"the model server at {self.endpoint}"
        responding = False
        try:
            events = await self.client.messages.create(**params)
            responding = True
            async for event in self._events(events):
                yield event
        except ProviderError:
            raise
        except anthropic.APIStatusError as exc:
            status = exc.status_code
            if status < 400:
                # An `error` event inside a 200 stream: its type says what happened.
                status = _STREAM_ERROR_STATUS.get(str(exc.type or ""), 500)
            raise status_error(server, status, exc.body, exc.response.headers) from exc
        except httpx2.TransportError as exc:
            # The SDK does not wrap transport failures that happen while reading the stream.
            raise connection_error(server, responding, exc) from exc
        except Exception as exc:
            failure = sdk_failure(anthropic, exc, server, streaming=True, responding=responding)
            raise failure from exc

    async def _events(self, events: AsyncIterator[Any]) -> AsyncIterator[StreamEvent]:
        tool_index: dict[int, int] = {}  # content block index -> our tool call index
        whole_input: set[int] = set()  # calls whose input came complete in the start event
        streamed: set[int] = set()  # calls that produced some argument text
        stop_reason: str | None = None
        usage = Usage()
        async for event in events:
            kind = event.type
            if kind == "message_start":
                start_usage = getattr(event.message, "usage", None)
                if start_usage is not None:
                    _read_input_usage(usage, start_usage)
                    usage.output_tokens = start_usage.output_tokens or 0
            elif kind == "content_block_start":
                block = event.content_block
                if block.type == "text" and block.text:
                    yield TextDelta(block.text)
                elif block.type == "tool_use":
                    index = len(tool_index)
                    tool_index[event.index] = index
                    yield ToolCallStart(index=index, id=block.id, name=block.name)
                    # The API starts with `input: {}` and streams the JSON; a proxy may
                    # send the whole input here instead.
                    if block.input:
                        yield ToolCallArgsDelta(index, json.dumps(block.input))
                        whole_input.add(index)
                        streamed.add(index)
            elif kind == "content_block_delta":
                delta = event.delta
                if delta.type == "text_delta":
                    if delta.text:
                        yield TextDelta(delta.text)
                elif delta.type == "input_json_delta" and event.index in tool_index:
                    index = tool_index[event.index]
                    if delta.partial_json and index not in whole_input:
                        yield ToolCallArgsDelta(index, delta.partial_json)
                        streamed.add(index)
            elif kind == "content_block_stop":
                if event.index in tool_index:
                    index = tool_index[event.index]
                    if index not in streamed:
                        # A call without arguments streams no JSON at all; say `{}`.
                        yield ToolCallArgsDelta(index, "{}")
            elif kind == "message_delta":
                if event.delta.stop_reason:
                    stop_reason = event.delta.stop_reason
                if event.usage is not None:
                    usage.output_tokens = event.usage.output_tokens or usage.output_tokens
                    if getattr(event.usage, "input_tokens", None):
                        _read_input_usage(usage, event.usage)
        if stop_reason is None:
            raise ProviderError(
                "malformed_stream", "the model stream ended before a stop reason was sent"
            )
        reason = _STOP_REASONS.get(stop_reason, "stop")
        if reason == "stop" and tool_index:
            reason = "tool_calls"
        yield Finish(reason, usage)


def _read_input_usage(usage: Usage, reported: Any) -> None:
    """Anthropic counts cache reads and writes apart from `input_tokens`; our input figure is
    everything the request held, cached included."""
    cached = getattr(reported, "cache_read_input_tokens", None) or 0
    written = getattr(reported, "cache_creation_input_tokens", None) or 0
    usage.input_tokens = (getattr(reported, "input_tokens", None) or 0) + cached + written
    usage.cached_input_tokens = cached
