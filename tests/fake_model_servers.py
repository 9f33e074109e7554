"""A loopback HTTP server that speaks the OpenAI and Anthropic streaming APIs.

Real HTTP on 127.0.0.1 (http.server in a thread), for tests that drive the real SDKs:

    with FakeModelServer() as server:
        server.enqueue(ModelReply(text="hi", tool_calls=[ReplyToolCall("read_file", {...})]))
        provider = OpenAIProvider("m", base_url=server.openai_base_url, ...)
        ...
        assert server.requests[0].body["tools"][0]["function"]["name"] == "read_file"

Routes: `POST .../chat/completions` answers in OpenAI chat-completions SSE, `POST .../messages`
in Anthropic Messages SSE. Each request takes the next queued reply (or, if none is queued,
asks `responder`, else answers 500 "no reply queued"). Replies:

- `ModelReply`: a streamed answer (text, tool calls, usage, finish reason), per the route's API;
- `ErrorReply`: an HTTP error status with an API-shaped error body and optional headers
  (e.g. 401, 429 with `Retry-After`, 500);
- `RawReply`: a 200 `text/event-stream` body sent as given (malformed streams, error events);
- `DropConnection`: sends the response head and `partial` body bytes, then closes the socket.

`gate` sees every model call first (tests/chat_templates.py renders real chat templates
there); `props` is what `GET /props` answers (llama.cpp).

`collect(provider.stream(request))` drains a provider stream into a `StreamSummary`.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from plan_lsp.providers.base import (
    Finish,
    StreamEvent,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallStart,
)


@dataclass
class ReplyToolCall:
    name: str
    # An object is sent as JSON; a string is sent verbatim (may be broken JSON).
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None


@dataclass
class ModelReply:
    text: str = ""
    tool_calls: list[ReplyToolCall] = field(default_factory=list)
    # None: "tool_calls"/"tool_use" when there are tool calls, else "stop"/"end_turn".
    finish_reason: str | None = None
    input_tokens: int = 11
    output_tokens: int = 7
    chunk: int = 8
    # Pause between streamed events, to simulate a slow model.
    delay_ms: int = 0
    # Input tokens read from the server's prompt cache (OpenAI `prompt_tokens_details`,
    # Anthropic `cache_read_input_tokens`) and written to it (Anthropic only).
    cache_read: int = 0
    cache_write: int = 0
    # llama.cpp's `timings` object, sent with the finish chunk (`cache_n`: reused tokens).
    timings: dict[str, Any] | None = None


@dataclass
class ErrorReply:
    status: int
    message: str = "simulated failure"
    headers: dict[str, str] = field(default_factory=dict)
    # Overrides the API-shaped JSON error body when given.
    body: str | None = None
    content_type: str = "application/json"


@dataclass
class RawReply:
    body: str
    status: int = 200
    content_type: str = "text/event-stream"


@dataclass
class DropConnection:
    partial: str = ""


Reply = ModelReply | ErrorReply | RawReply | DropConnection


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


def _pieces(text: str, size: int) -> Iterator[str]:
    for start in range(0, len(text), max(1, size)):
        yield text[start : start + size]


def _arguments_text(call: ReplyToolCall) -> str:
    return call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)


def openai_sse_events(reply: ModelReply, model: str, include_usage: bool) -> list[str]:
    """The `data:` payloads of a chat-completions stream, `[DONE]` included."""

    def chunk(choices: list[dict[str, Any]], **extra: Any) -> str:
        body = {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": choices,
            **extra,
        }
        return json.dumps(body)

    def delta(d: dict[str, Any], finish: str | None = None) -> str:
        return chunk([{"index": 0, "delta": d, "finish_reason": finish}])

    events = [delta({"role": "assistant", "content": ""})]
    events += [delta({"content": piece}) for piece in _pieces(reply.text, reply.chunk)]
    for i, call in enumerate(reply.tool_calls):
        head = {
            "index": i,
            "id": call.id or f"call_fake_{i}",
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        events.append(delta({"tool_calls": [head]}))
        events += [
            delta({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
            for piece in _pieces(_arguments_text(call), reply.chunk)
        ]
    finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
    last = chunk([{"index": 0, "delta": {}, "finish_reason": finish}])
    if reply.timings is not None:
        last = chunk([{"index": 0, "delta": {}, "finish_reason": finish}], timings=reply.timings)
    events.append(last)
    if include_usage:
        usage: dict[str, Any] = {
            "prompt_tokens": reply.input_tokens,
            "completion_tokens": reply.output_tokens,
            "total_tokens": reply.input_tokens + reply.output_tokens,
        }
        if reply.cache_read:
            usage["prompt_tokens_details"] = {"cached_tokens": reply.cache_read}
        events.append(chunk([], usage=usage))
    events.append("[DONE]")
    return [f"data: {e}\n\n" for e in events]


def openai_completion(reply: ModelReply, model: str) -> dict[str, Any]:
    """A non-streamed chat completion (what `stream: false` asks for)."""
    calls = [
        {
            "id": call.id or f"call_fake_{i}",
            "type": "function",
            "function": {"name": call.name, "arguments": _arguments_text(call)},
        }
        for i, call in enumerate(reply.tool_calls)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if calls:
        message["tool_calls"] = calls
    finish = reply.finish_reason or ("tool_calls" if calls else "stop")
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": reply.input_tokens,
            "completion_tokens": reply.output_tokens,
            "total_tokens": reply.input_tokens + reply.output_tokens,
        },
    }


def anthropic_sse_events(reply: ModelReply, model: str) -> list[str]:
    """The `event:`/`data:` records of a Messages stream."""
    events: list[tuple[str, dict[str, Any]]] = []
    message: dict[str, Any] = {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": reply.input_tokens,
            "output_tokens": 1,
            "cache_read_input_tokens": reply.cache_read,
            "cache_creation_input_tokens": reply.cache_write,
        },
    }
    events.append(("message_start", {"type": "message_start", "message": message}))
    events.append(("ping", {"type": "ping"}))
    index = 0
    if reply.text:
        block: dict[str, Any] = {"type": "text", "text": ""}
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": block},
            )
        )
        for piece in _pieces(reply.text, reply.chunk):
            d = {"type": "text_delta", "text": piece}
            events.append(
                ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": d})
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
        index = 1
    for i, call in enumerate(reply.tool_calls):
        block = {
            "type": "tool_use",
            "id": call.id or f"toolu_fake_{i}",
            "name": call.name,
            "input": {},
        }
        start = {"type": "content_block_start", "index": index, "content_block": block}
        events.append(("content_block_start", start))
        for piece in _pieces(_arguments_text(call), reply.chunk):
            d = {"type": "input_json_delta", "partial_json": piece}
            events.append(
                ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    stop = reply.finish_reason or ("tool_use" if reply.tool_calls else "end_turn")
    message_delta = {
        "type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": None},
        "usage": {"output_tokens": reply.output_tokens},
    }
    events.append(("message_delta", message_delta))
    events.append(("message_stop", {"type": "message_stop"}))
    return [f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events]


def _error_body(api: str, status: int, message: str) -> str:
    if api == "anthropic":
        kinds = {
            400: "invalid_request_error",
            401: "authentication_error",
            403: "permission_error",
            404: "not_found_error",
            429: "rate_limit_error",
            529: "overloaded_error",
        }
        kind = kinds.get(status, "api_error")
        return json.dumps({"type": "error", "error": {"type": kind, "message": message}})
    return json.dumps({"error": {"message": message, "type": "fake_error", "code": status}})


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Idle keep-alive connections end after this many seconds, so no thread lingers.
    timeout = 10
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def do_GET(self) -> None:
        self._record(None, probe=True)
        owner = self.server.owner
        if self.path.rstrip("/").endswith("/models") and owner.models_status == 200:
            ids = list(owner.models)
            if self.headers.get("anthropic-version"):
                data: Any = [
                    {
                        "id": m,
                        "type": "model",
                        "display_name": m,
                        "created_at": "2025-01-01T00:00:00Z",
                    }
                    for m in ids
                ]
                body: Any = {
                    "data": data,
                    "has_more": False,
                    "first_id": ids[0] if ids else None,
                    "last_id": ids[-1] if ids else None,
                }
            else:
                data = [{"id": m, "object": "model", "created": 0, "owned_by": "test"} for m in ids]
                body = {"object": "list", "data": data}
            self._send_json(200, json.dumps(body))
            return
        if self.path.rstrip("/") == "/props" and owner.props is not None:
            self._send_json(200, json.dumps(owner.props))
            return
        status = owner.models_status if self.path.rstrip("/").endswith("/models") else 404
        self._send_json(status, _error_body("openai", status, f"no route {self.path}"))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw.decode("utf-8", "replace")
        if self.path.endswith("/chat/completions"):
            api = "openai"
        elif self.path.endswith("/messages"):
            api = "anthropic"
        else:
            # Not a model call (a server probe such as Ollama's /api/show): not recorded.
            self._send_json(404, _error_body("openai", 404, f"no route {self.path}"))
            return
        recorded = self._record(body)
        gate = self.server.owner.gate
        reply = (gate(recorded) if gate is not None else None) or self.server.owner.next_reply(
            recorded
        )
        if reply is None:
            self._send_json(500, _error_body(api, 500, "no reply queued"))
        elif isinstance(reply, ErrorReply):
            text = (
                reply.body
                if reply.body is not None
                else _error_body(api, reply.status, reply.message)
            )
            self._send_json(reply.status, text, reply.headers, reply.content_type)
        elif isinstance(reply, RawReply):
            self._start_stream(reply.status, reply.content_type)
            self._write_chunk(reply.body.encode())
            self._end_stream()
        elif isinstance(reply, DropConnection):
            self._start_stream(200, "text/event-stream")
            if reply.partial:
                self._write_chunk(reply.partial.encode())
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        else:
            model = str(body.get("model", "fake-model")) if isinstance(body, dict) else "fake-model"
            if api == "openai" and isinstance(body, dict) and body.get("stream") is False:
                self._send_json(200, json.dumps(openai_completion(reply, model)))
                return
            if api == "openai":
                options = body.get("stream_options") if isinstance(body, dict) else None
                include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
                events = openai_sse_events(reply, model, include_usage)
            else:
                events = anthropic_sse_events(reply, model)
            self._start_stream(200, "text/event-stream")
            for i, event in enumerate(events):
                if reply.delay_ms and i:
                    time.sleep(reply.delay_ms / 1000.0)
                self._write_chunk(event.encode())
            self._end_stream()

    def _record(self, body: Any, probe: bool = False) -> RecordedRequest:
        recorded = RecordedRequest(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )
        self.server.owner.record(recorded, probe)
        return recorded

    def _send_json(
        self,
        status: int,
        text: str,
        headers: dict[str, str] | None = None,
        content_type: str = "application/json",
    ) -> None:
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _start_stream(self, status: int, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: FakeModelServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up mid-reply is expected here; anything else is reported.
        import sys

        exc = sys.exc_info()[1]
        if not isinstance(exc, (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


class FakeModelServer:
    """A started-on-demand loopback model server; use as a (sync) context manager."""

    def __init__(self, responder: Callable[[RecordedRequest], Reply | None] | None = None) -> None:
        self.responder = responder
        # What GET .../models answers: these ids, or an error status.
        self.models: list[str] = ["fake-model"]
        self.models_status = 200
        # What GET /props answers (llama.cpp's server properties); None: 404.
        self.props: dict[str, Any] | None = None
        # Asked first for every model call: a reply here (a chat template's refusal, say)
        # answers it instead of the queue.
        self.gate: Callable[[RecordedRequest], Reply | None] | None = None
        # Model calls (chat completions, messages), in order.
        self.requests: list[RecordedRequest] = []
        # Everything else asked (model lists, context-window probes).
        self.probes: list[RecordedRequest] = []
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- configuration, from the test's thread --------------------------------------------

    def enqueue(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("server not started")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    def bodies(self) -> list[Any]:
        with self._lock:
            return [r.body for r in self.requests]

    # -- called from handler threads --------------------------------------------------------

    def record(self, request: RecordedRequest, probe: bool = False) -> None:
        with self._lock:
            (self.probes if probe else self.requests).append(request)

    def next_reply(self, request: RecordedRequest) -> Reply | None:
        with self._lock:
            if self._replies:
                return self._replies.popleft()
        return self.responder(request) if self.responder is not None else None

    # -- life cycle -------------------------------------------------------------------------

    def start(self, port: int = 0) -> FakeModelServer:
        """Serve on `port` (0: any free one); a stopped server starts again on its port."""
        server = _Server(("127.0.0.1", port), _Handler)
        server.owner = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def unused_local_port() -> int:
    """A 127.0.0.1 port nobody listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class StreamSummary:
    """A provider stream put back together: what a model turn said and called."""

    text: str
    tool_calls: list[tuple[str, str, str]]  # (id, name, arguments text), in index order
    finish: Finish | None
    events: list[StreamEvent]


async def collect(stream: AsyncIterator[StreamEvent]) -> StreamSummary:
    """Drain a provider stream and assemble it; ProviderErrors propagate."""
    events: list[StreamEvent] = []
    text: list[str] = []
    calls: dict[int, list[str]] = {}
    finish: Finish | None = None
    async for event in stream:
        events.append(event)
        if isinstance(event, TextDelta):
            text.append(event.text)
        elif isinstance(event, ToolCallStart):
            calls[event.index] = [event.id, event.name, ""]
        elif isinstance(event, ToolCallArgsDelta):
            calls[event.index][2] += event.delta
        elif isinstance(event, Finish):
            finish = event
    ordered = [(c[0], c[1], c[2]) for _, c in sorted(calls.items())]
    return StreamSummary("".join(text), ordered, finish, events)
