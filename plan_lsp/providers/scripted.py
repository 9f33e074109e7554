"""The scripted provider: a model that replays a JSON script (DESIGN.md §9).

The script belongs to the provider instance, and there is one instance per server process:
every `stream()` call — from any run or subagent — takes the next turn, in the order the
calls are made. Past the last turn the model answers `(end of script)`.

Script format::

    {"chunk": 16,
     "turns": [{"text"?: str,
                "tool_calls"?: [{"name": str, "arguments": object | str}],
                "delay_ms"?: int,
                "error"?: {"kind": str, "message": str, "retry_after"?: float}}]}

Tool arguments given as an object are sent as `json.dumps(arguments)`; given as a string
they are sent verbatim (so a script can send broken JSON). A turn with `error` streams
whatever text and tool calls it has and then raises `ProviderError(kind, message)`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from plan_lsp.providers.base import (
    Finish,
    ModelRequest,
    ProviderError,
    ProviderErrorKind,
    StreamEvent,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallStart,
)

END_OF_SCRIPT_TEXT = "(end of script)"


class ScriptedToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    arguments: dict[str, Any] | str = Field(default_factory=dict)

    def argument_text(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments)


class ScriptedError(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: ProviderErrorKind
    message: str
    retry_after: float | None = None


class ScriptedTurn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str | None = None
    tool_calls: list[ScriptedToolCall] = Field(default_factory=list)
    delay_ms: int = Field(default=0, ge=0)
    error: ScriptedError | None = None


class Script(BaseModel):
    model_config = ConfigDict(extra="forbid")

    chunk: int = Field(default=16, ge=1)
    turns: list[ScriptedTurn]


def load_script(path: Path) -> Script:
    """Read and validate a script file; every problem is a `ProviderError("config")`."""
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ProviderError("config", f"cannot read script file {path}: {exc}") from exc
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ProviderError(
            "config",
            f"script file {path} is not valid JSON: {exc.msg} "
            f"(line {exc.lineno}, column {exc.colno})",
        ) from exc
    try:
        return Script.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}"
            for err in exc.errors()
        )
        raise ProviderError(
            "config", f"script file {path} has the wrong shape: {problems}"
        ) from exc


def _chunks(text: str, size: int) -> Iterator[str]:
    for start in range(0, len(text), size):
        yield text[start : start + size]


class ScriptedProvider:
    name = "scripted"

    def __init__(self, script_path: Path | str) -> None:
        self.script_path = Path(script_path)
        self.script = load_script(self.script_path)
        self._calls = 0

    @property
    def calls(self) -> int:
        """How many model requests this provider has answered (script turns taken)."""
        return self._calls

    async def check(self) -> str:
        return f"the scripted provider replays {self.script_path} (offline)"

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        # The turn is claimed here, at call time, not on first iteration: the order of
        # `stream()` calls decides which request gets which turn.
        self._calls += 1
        turn_number = self._calls
        turns = self.script.turns
        turn = turns[turn_number - 1] if turn_number <= len(turns) else None
        return self._play(turn_number, turn)

    async def _play(
        self, turn_number: int, turn: ScriptedTurn | None
    ) -> AsyncIterator[StreamEvent]:
        size = self.script.chunk
        if turn is None:
            for piece in _chunks(END_OF_SCRIPT_TEXT, size):
                yield TextDelta(piece)
            yield Finish("stop")
            return

        delay = turn.delay_ms / 1000.0
        first = True

        async def pause() -> None:
            # Sleep between deltas (not before the first) to simulate a slow model.
            nonlocal first
            if delay and not first:
                await asyncio.sleep(delay)
            first = False

        for piece in _chunks(turn.text or "", size):
            await pause()
            yield TextDelta(piece)
        for index, call in enumerate(turn.tool_calls):
            await pause()
            yield ToolCallStart(index=index, id=f"call_{turn_number}_{index}", name=call.name)
            for piece in _chunks(call.argument_text(), size):
                await pause()
                yield ToolCallArgsDelta(index=index, delta=piece)
        if turn.error is not None:
            raise ProviderError(
                turn.error.kind, turn.error.message, retry_after=turn.error.retry_after
            )
        yield Finish("tool_calls" if turn.tool_calls else "stop")
