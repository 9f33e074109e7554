"""One streaming interface for every model back end.

A provider turns a `ModelRequest` into a stream of `StreamEvent`s: text deltas, tool-call
starts and argument deltas, and one final `Finish`. Failures are raised as `ProviderError`
with a kind the agent can act on; nothing else escapes a provider.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Role = Literal["system", "user", "assistant", "tool"]


@dataclass
class ToolCall:
    id: str
    name: str
    # The raw JSON text the model produced; may be invalid JSON (the gate reports it).
    arguments: str


@dataclass
class ChatMessage:
    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    # Structured metadata; `ephemeral=True` marks per-request context (reminders, mode
    # notes) that is sent once and never stored in the conversation.
    meta: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [
                {"id": c.id, "name": c.name, "arguments": c.arguments} for c in self.tool_calls
            ]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        if self.meta:
            out["meta"] = self.meta
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ChatMessage:
        return cls(
            role=data["role"],
            content=data.get("content", ""),
            tool_calls=[ToolCall(**c) for c in data.get("tool_calls", [])],
            tool_call_id=data.get("tool_call_id"),
            name=data.get("name"),
            meta=data.get("meta", {}),
        )


@dataclass
class ToolSpec:
    """A tool definition as the model sees it."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass
class ModelRequest:
    run_id: str
    mode: str
    messages: list[ChatMessage]
    tools: list[ToolSpec]
    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    # "step": a step of the agent's run; "compaction": a summary of older turns (no tools
    # are offered and the answer is text only).
    purpose: Literal["step", "compaction"] = "step"


@dataclass
class TextDelta:
    text: str


@dataclass
class ToolCallStart:
    index: int
    id: str
    name: str


@dataclass
class ToolCallArgsDelta:
    index: int
    delta: str


@dataclass
class Usage:
    """What the provider reported for one response (zeros: nothing reported). Input tokens
    include the cached ones."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0


@dataclass
class Finish:
    # "stop" (no tool calls), "tool_calls", "length", "error"
    reason: str
    usage: Usage = field(default_factory=Usage)


StreamEvent = TextDelta | ToolCallStart | ToolCallArgsDelta | Finish


def is_json_object(arguments: str) -> bool:
    """Whether tool-call arguments are a JSON object (empty arguments count as `{}`)."""
    if not arguments.strip():
        return True
    try:
        return isinstance(json.loads(arguments), dict)
    except (ValueError, RecursionError):
        return False


def replayable_arguments(arguments: str) -> str:
    """Tool-call arguments as they may be sent back in a conversation: a call whose
    arguments were cut off or are not a JSON object is replayed as `{}` (its tool result says
    what happened) — model servers answer every later request with an error otherwise."""
    return arguments if arguments.strip() and is_json_object(arguments) else "{}"


ProviderErrorKind = Literal[
    "connection",
    "auth",
    "rate_limit",
    "bad_request",
    # The server answers, but not at this URL (HTTP 404 for something other than a model).
    "not_found",
    # The server does not serve the model asked for.
    "model",
    "server",
    "malformed_stream",
    "config",
    # The server answers, but ignores the tools it is offered (a model or chat template
    # without tool support): an agent cannot work with it.
    "no_tools",
]


class ProviderError(Exception):
    def __init__(
        self, kind: ProviderErrorKind, message: str, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.retry_after = retry_after


# What the user can do about each kind of failure: an error code clients key their help on,
# and the setting (client-facing name) that fixes it.
_FIXES: dict[str, tuple[str, str | None]] = {
    "config": ("provider_unconfigured", "provider"),
    "connection": ("provider_unreachable", "baseUrl"),
    "auth": ("provider_auth", "apiKey"),
    "rate_limit": ("provider_rate_limited", None),
    "bad_request": ("provider_failed", None),
    "not_found": ("provider_not_found", "baseUrl"),
    "model": ("provider_model", "model"),
    "server": ("provider_failed", None),
    "malformed_stream": ("provider_failed", None),
    "no_tools": ("provider_no_tools", "model"),
}


def error_help(error: ProviderError) -> tuple[str, dict[str, str]]:
    """(code, fix) for a provider failure, as sent in `planLsp/update {kind: "error"}`."""
    code, setting = _FIXES.get(error.kind, ("provider_failed", None))
    return code, ({"setting": setting} if setting else {})


class Provider(Protocol):
    name: str

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Stream one model response. Raises ProviderError on failure."""

    async def check(self) -> str:
        """One cheap request that proves the model server answers and serves the model;
        returns a sentence saying so. Raises ProviderError otherwise."""

    async def context_window(self) -> int | None:
        """The context window the model server reports for the model (tokens), or None when
        it reports none (or cannot be asked). Never raises."""
