"""The `openai` provider: any OpenAI-compatible chat-completions endpoint.

Works against OpenAI itself and local servers (Ollama, vLLM, LM Studio, llama.cpp) through
the official `openai` SDK. The SDK is imported when a provider is built, never when
`plan_lsp.providers` is imported.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from plan_lsp.providers.base import (
    Finish,
    ModelRequest,
    ProviderError,
    StreamEvent,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallStart,
    Usage,
)
from plan_lsp.providers.http_errors import (
    DEFAULT_TIMEOUT_S,
    SdkProvider,
    error_detail,
    sdk_failure,
)
from plan_lsp.providers.shaping import ChatRoles, openai_messages, refuses_roles
from plan_lsp.providers.windows import reported_window

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from openai import AsyncOpenAI


@dataclass
class _PendingCall:
    """A streamed tool call; `index` is ours (-1 until the name is known and it started)."""

    id: str | None
    name: str | None
    index: int = -1
    buffered: str = ""


class OpenAIProvider(SdkProvider):
    name = "openai"
    sdk_client = "AsyncOpenAI"
    client: AsyncOpenAI

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        timeout: float | None = DEFAULT_TIMEOUT_S,
        *,
        max_retries: int = 2,
        include_usage: bool = True,
        chat_roles: ChatRoles = "auto",
        configured_window: int | None = None,
    ) -> None:
        super().__init__(
            model, base_url, api_key, temperature, max_tokens, timeout, max_retries=max_retries
        )
        # Cleared after a server refuses `stream_options` (older local servers do).
        self.include_usage = include_usage
        self.chat_roles = chat_roles
        # Only user and assistant turns: configured, or learned from a refusal ("auto").
        self.user_assistant = chat_roles == "user_assistant"
        # The user's `context_window`, which the connection test checks against the server's.
        self.configured_window = configured_window
        self._window: int | None = None
        self._window_asked = False

    def request_params(self, request: ModelRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": request.model or self.model,
            "messages": openai_messages(request.messages, self.user_assistant),
            "stream": True,
        }
        if request.tools:
            params["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.parameters,
                    },
                }
                for tool in request.tools
            ]
        temperature, max_tokens = self.settings(request)
        if temperature is not None:
            params["temperature"] = temperature
        if max_tokens is not None:
            params["max_tokens"] = max_tokens
        if self.include_usage:
            params["stream_options"] = {"include_usage": True}
        return params

    async def context_window(self) -> int | None:
        if not self._window_asked:
            self._window_asked = True
            self._window = await reported_window(self.base_url, self.model, self.api_key)
        return self._window

    async def check(self) -> str:
        from plan_lsp.providers.connection_test import check_openai

        return await check_openai(self)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        import openai  # loaded by __init__ already; at module level: ~1 s at import

        params = self.request_params(request)
        server = f"the model server at {self.endpoint}"
        responding = False
        try:
            chunks = await self._open(request, params)
            responding = True
            async for event in self._events(chunks):
                yield event
        except ProviderError:
            raise
        except (openai.APIStatusError, openai.APIConnectionError) as exc:
            raise sdk_failure(openai, exc, server, responding=responding) from exc
        except openai.APIError as exc:
            # An error object sent inside an otherwise successful stream.
            message = f"{server} reported an error mid-stream: {exc.message}"
            raise ProviderError("server", message) from exc
        except Exception as exc:
            raise sdk_failure(openai, exc, server, streaming=True, responding=responding) from exc

    async def _open(self, request: ModelRequest, params: dict[str, Any]) -> Any:
        """The response stream; a server refusing `stream_options` (older local servers) is
        asked again without them, and one whose chat template refuses the roles (with
        `chat_roles = "auto"`) with user and assistant turns only, kept from then on."""
        import openai  # loaded by __init__ already; at module level: ~1 s at import

        while True:
            try:
                return await self.client.chat.completions.create(**params)
            except openai.BadRequestError as exc:
                detail = error_detail(exc.body) or str(exc)
                if "stream_options" in params and "stream_options" in str(exc):
                    self.include_usage = False
                    del params["stream_options"]
                elif self.chat_roles == "auto" and not self.user_assistant:
                    if not refuses_roles(detail):
                        raise
                    log.info("%s: only user and assistant turns from now on", detail)
                    self.user_assistant = True
                    params["messages"] = openai_messages(request.messages, True)
                else:
                    raise

    async def _events(self, chunks: AsyncIterator[Any]) -> AsyncIterator[StreamEvent]:
        calls: dict[int, _PendingCall] = {}
        started = 0
        finish_reason: str | None = None
        usage = Usage()
        async for chunk in chunks:
            if getattr(chunk, "usage", None) is not None:
                details = getattr(chunk.usage, "prompt_tokens_details", None)
                usage = Usage(
                    input_tokens=chunk.usage.prompt_tokens or 0,
                    output_tokens=chunk.usage.completion_tokens or 0,
                    cached_input_tokens=getattr(details, "cached_tokens", None)
                    or usage.cached_input_tokens,
                )
            timings = getattr(chunk, "timings", None)  # llama.cpp: prompt tokens it reused
            if isinstance(timings, dict) and isinstance(timings.get("cache_n"), int):
                usage.cached_input_tokens = usage.cached_input_tokens or timings["cache_n"]
            for choice in chunk.choices or []:
                if choice.index not in (0, None):
                    continue
                delta = choice.delta
                if delta is not None and delta.content:
                    yield TextDelta(delta.content)
                for piece in (delta.tool_calls if delta is not None else None) or []:
                    fn = piece.function
                    name = fn.name if fn is not None else None
                    args = (fn.arguments if fn is not None else None) or ""
                    call = calls.get(piece.index)
                    # Some servers reuse index 0 for every call; a new id with a name is a
                    # new call.
                    if call is None or (
                        piece.id and call.id and piece.id != call.id and name and call.index >= 0
                    ):
                        call = _PendingCall(id=piece.id, name=None)
                        calls[piece.index] = call
                    if piece.id and not call.id:
                        call.id = piece.id
                    if name and call.index < 0:
                        call.name = name
                        call.index = started
                        started += 1
                        yield ToolCallStart(
                            index=call.index, id=call.id or f"call_{call.index}", name=name
                        )
                        if call.buffered:
                            yield ToolCallArgsDelta(call.index, call.buffered)
                            call.buffered = ""
                    if args:
                        if call.index >= 0:
                            yield ToolCallArgsDelta(call.index, args)
                        else:
                            call.buffered += args
                if choice.finish_reason:
                    finish_reason = choice.finish_reason
        if any(call.index < 0 for call in calls.values()):
            raise ProviderError("malformed_stream", "the model streamed a tool call without a name")
        if finish_reason is None:
            raise ProviderError(
                "malformed_stream", "the model stream ended before a finish reason was sent"
            )
        yield Finish(_finish_reason(finish_reason, started > 0), usage)


def _finish_reason(reason: str, had_tool_calls: bool) -> str:
    if reason == "length":
        return "length"
    if reason == "content_filter":
        return "error"
    # Some local servers say "stop" even when the turn carries tool calls.
    if had_tool_calls or reason in ("tool_calls", "function_call"):
        return "tool_calls"
    return "stop"
