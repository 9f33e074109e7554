"""The `openai` provider: any OpenAI-compatible chat-completions endpoint.

Works against OpenAI itself and local servers (Ollama, vLLM, LM Studio, llama.cpp) through
the official `openai` SDK. The SDK is imported when a provider is built, never when
`plan_lsp.providers` is imported.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
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
)

if TYPE_CHECKING:
    from openai import AsyncOpenAI

# Local servers ignore the key, but the SDK (and some proxies) want a non-empty one.
PLACEHOLDER_API_KEY = "not-needed"
DEFAULT_TIMEOUT_S = 120.0


def check_base_url(base_url: str | None) -> None:
    """Reject a base URL that can never work, at start-up rather than on the first request."""
    if base_url is not None and not base_url.startswith(("http://", "https://")):
        raise ProviderError("config", f"base URL {base_url!r} must start with http:// or https://")


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from `retry-after-ms` or `Retry-After` (seconds or an HTTP date)."""
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def error_detail(body: object) -> str | None:
    """The human message inside an API error body (`{"error": {"message": ...}}` and kin)."""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            message = inner.get("message")
            if isinstance(message, str) and message:
                return message
        elif isinstance(inner, str) and inner:
            return inner
    if isinstance(body, str) and body.strip():
        return body.strip()[:500]
    return None


def status_error(
    server: str, status: int, body: object, headers: Mapping[str, str] | None
) -> ProviderError:
    """Map an HTTP error status from a model API to a ProviderError; `server` names it."""
    detail = error_detail(body) or "no details"
    if status in (401, 403):
        return ProviderError("auth", f"{server} rejected the credentials (HTTP {status}): {detail}")
    if status == 429:
        wait = retry_after_seconds(headers)
        hint = f"; retry after {wait:g}s" if wait is not None else ""
        return ProviderError(
            "rate_limit",
            f"{server} is rate limiting requests (HTTP 429): {detail}{hint}",
            retry_after=wait,
        )
    if status >= 500:
        return ProviderError("server", f"{server} failed (HTTP {status}): {detail}")
    return ProviderError("bad_request", f"{server} refused the request (HTTP {status}): {detail}")


def connection_error(server: str, responding: bool, cause: object) -> ProviderError:
    """A transport failure, before the response (unreachable) or while it streamed."""
    if responding:
        return ProviderError(
            "connection", f"the connection to {server} broke mid-response: {cause}"
        )
    return ProviderError("connection", f"cannot reach {server}: {cause}")


def openai_messages(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """ChatMessages in chat-completions form; `meta` and `name` stay on our side."""
    out: list[dict[str, Any]] = []
    for message in messages:
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
                            "function": {"name": call.name, "arguments": call.arguments},
                        }
                        for call in message.tool_calls
                    ],
                }
            )
        else:
            out.append({"role": message.role, "content": message.content})
    return out


@dataclass
class _PendingCall:
    """A streamed tool call; `index` is ours (-1 until the name is known and it started)."""

    id: str | None
    name: str | None
    index: int = -1
    buffered: str = ""


class OpenAIProvider:
    name = "openai"

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
    ) -> None:
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - a declared dependency
            raise ProviderError("config", "the `openai` package is not installed") from exc
        check_base_url(base_url)
        self.model = model
        self.base_url = base_url
        self.temperature = temperature
        self.max_tokens = max_tokens
        # Cleared after a server refuses `stream_options` (older local servers do).
        self.include_usage = include_usage
        self._client: AsyncOpenAI = openai.AsyncOpenAI(
            api_key=api_key or PLACEHOLDER_API_KEY,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
        )

    @property
    def endpoint(self) -> str:
        return str(self._client.base_url)

    async def aclose(self) -> None:
        await self._client.close()

    def request_params(self, request: ModelRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": request.model or self.model,
            "messages": openai_messages(request.messages),
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
        temperature = request.temperature if request.temperature is not None else self.temperature
        if temperature is not None:
            params["temperature"] = temperature
        max_tokens = request.max_tokens if request.max_tokens is not None else self.max_tokens
        if max_tokens is not None:
            params["max_tokens"] = max_tokens
        if self.include_usage:
            params["stream_options"] = {"include_usage": True}
        return params

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        return self._stream(request)

    async def _stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        import openai

        params = self.request_params(request)
        server = f"the model server at {self.endpoint}"
        responding = False
        try:
            try:
                chunks = await self._client.chat.completions.create(**params)
            except openai.BadRequestError as exc:
                if "stream_options" not in params or "stream_options" not in str(exc):
                    raise
                self.include_usage = False
                del params["stream_options"]
                chunks = await self._client.chat.completions.create(**params)
            responding = True
            async for event in self._events(chunks):
                yield event
        except ProviderError:
            raise
        except openai.APITimeoutError as exc:
            raise ProviderError("connection", f"{server} timed out") from exc
        except openai.APIConnectionError as exc:
            raise connection_error(server, responding, exc.__cause__ or exc) from exc
        except openai.APIStatusError as exc:
            raise status_error(server, exc.status_code, exc.body, exc.response.headers) from exc
        except openai.APIError as exc:
            # An error object sent inside an otherwise successful stream.
            raise ProviderError(
                "server", f"{server} reported an error mid-stream: {exc.message}"
            ) from exc
        except openai.OpenAIError as exc:
            raise ProviderError("server", f"model call to {server} failed: {exc}") from exc
        except (ValueError, TypeError, AttributeError, KeyError) as exc:
            # Undecodable SSE data or chunks without the chat-completions shape.
            raise ProviderError(
                "malformed_stream", f"{server} sent an unparsable stream: {exc}"
            ) from exc

    async def _events(self, chunks: AsyncIterator[Any]) -> AsyncIterator[StreamEvent]:
        calls: dict[int, _PendingCall] = {}
        started = 0
        finish_reason: str | None = None
        usage = Usage()
        async for chunk in chunks:
            if getattr(chunk, "usage", None) is not None:
                usage = Usage(
                    input_tokens=chunk.usage.prompt_tokens or 0,
                    output_tokens=chunk.usage.completion_tokens or 0,
                )
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
