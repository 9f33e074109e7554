"""The scripted provider: a model that replays a JSON script (docs/configuration.md).

One instance per server process owns the script: every `stream()` call, from any run or
subagent, takes the next turn in call order; past the last, the model answers `(end of
script)`. Arguments given as a string are sent verbatim (so a script can send broken JSON);
a turn with `error` streams what it has, then raises it. Usage is the turn's `usage`, else
an estimate (`providers.tokens`). A compaction request takes the next turn only if it is
marked `"compaction": true`, else gets a built-in summary, so scripts need not know when
compaction happens. `timeline` lines: `{"t", "turn", "call", "kind": "text" | "args",
"sent"}`.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
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
    Usage,
)
from plan_lsp.providers.tokens import estimate_request, estimate_text

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


def _range(bounds: tuple[int, int]) -> tuple[int, int]:
    low, high = bounds
    return (low, high) if low <= high else (high, low)


class Pace(BaseModel):
    """How a model streams: speed, delta sizes, jitter and pauses (see the module's doc)."""

    model_config = ConfigDict(extra="forbid")

    chars_per_second: float = Field(default=1000.0, gt=0)
    chunk: tuple[int, int] = (1, 40)
    jitter: float = Field(default=0.5, ge=0, le=1)
    pause_every_chars: tuple[int, int] = (300, 700)
    pause_ms: tuple[int, int] = (400, 1200)
    seed: int = 1

    def pieces(self, text: str, rng: random.Random) -> Iterator[tuple[float, str]]:
        """`(seconds to wait before it, delta)` for each delta of `text`."""
        low, high = _range(self.chunk)
        every_low, every_high = _range(self.pause_every_chars)
        pause_low, pause_high = _range(self.pause_ms)
        until_pause = rng.randint(max(1, every_low), max(1, every_high))
        start = 0
        while start < len(text):
            size = rng.randint(max(1, low), max(1, high))
            piece = text[start : start + size]
            start += len(piece)
            wait = len(piece) / self.chars_per_second
            wait *= 1 + rng.uniform(-self.jitter, self.jitter)
            until_pause -= len(piece)
            if until_pause <= 0:
                wait += rng.uniform(pause_low, pause_high) / 1000.0
                until_pause = rng.randint(max(1, every_low), max(1, every_high))
            yield max(0.0, wait), piece


class ScriptedUsage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    cached_input_tokens: int = Field(default=0, ge=0)


class ScriptedTurn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str | None = None
    tool_calls: list[ScriptedToolCall] = Field(default_factory=list)
    delay_ms: int = Field(default=0, ge=0)
    # Unset: the script's pace; null: this turn streams in the fast mode.
    pace: Pace | None = Field(default=None)
    error: ScriptedError | None = None
    # What the turn reports as usage; unset: estimated from the request and the answer.
    usage: ScriptedUsage | None = None
    # The turn answers a compaction's summary request (other turns never do: a summary
    # request meets an unmarked turn with a built-in summary, and the turn stays next).
    compaction: bool = False


class Script(BaseModel):
    model_config = ConfigDict(extra="forbid")

    chunk: int = Field(default=16, ge=1)
    pace: Pace | None = None
    timeline: str | None = None
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
        turns = self.script.turns
        if request.purpose == "compaction":
            upcoming = turns[self._calls] if self._calls < len(turns) else None
            if upcoming is None or not upcoming.compaction:
                return self._canned(built_in_summary(request), request)
        self._calls += 1
        turn_number = self._calls
        if turn_number > len(turns):
            return self._canned(END_OF_SCRIPT_TEXT, request)
        return self._play(turn_number, turns[turn_number - 1], request)

    async def context_window(self) -> int | None:
        return None

    async def _canned(self, text: str, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """A fixed answer: the end of the script, or a summary the script did not plan for."""
        for start in range(0, len(text), self.script.chunk):
            yield TextDelta(text[start : start + self.script.chunk])
        yield Finish("stop", _usage(request, text, None))

    def _record(self, turn: int, call: int | None, kind: str, sent: int) -> None:
        if self.script.timeline is None:
            return
        line = json.dumps({"t": time.time(), "turn": turn, "call": call, "kind": kind,
                           "sent": sent})  # fmt: skip
        try:
            with open(self.script.timeline, "a", encoding="utf-8") as out:
                out.write(line + "\n")
        except OSError:
            pass  # a test's record, never a reason to stop the model

    async def _play(
        self, turn_number: int, turn: ScriptedTurn, request: ModelRequest
    ) -> AsyncIterator[StreamEvent]:
        size = self.script.chunk
        # A turn's own pace wins, even null (the fast mode for that turn).
        pace = turn.pace if "pace" in turn.model_fields_set else self.script.pace
        rng = random.Random(f"{pace.seed}:{turn_number}") if pace is not None else None
        delay = turn.delay_ms / 1000.0
        first = True

        def pieces(text: str) -> Iterator[tuple[float, str]]:
            nonlocal first
            if pace is not None and rng is not None:
                yield from pace.pieces(text, rng)
                return
            for start in range(0, len(text), size):
                piece = text[start : start + size]
                # Between deltas (not before the first) to simulate a slow model.
                yield (delay if delay and not first else 0.0), piece
                first = False

        sent = 0
        for wait, piece in pieces(turn.text or ""):
            if wait:
                await asyncio.sleep(wait)
            sent += len(piece)
            self._record(turn_number, None, "text", sent)
            yield TextDelta(piece)
        for index, call in enumerate(turn.tool_calls):
            if delay and not first:
                await asyncio.sleep(delay)
            first = False
            yield ToolCallStart(index=index, id=f"call_{turn_number}_{index}", name=call.name)
            sent = 0
            for wait, piece in pieces(call.argument_text()):
                if wait:
                    await asyncio.sleep(wait)
                sent += len(piece)
                self._record(turn_number, index, "args", sent)
                yield ToolCallArgsDelta(index=index, delta=piece)
        if turn.error is not None:
            raise ProviderError(
                turn.error.kind, turn.error.message, retry_after=turn.error.retry_after
            )
        answer = (turn.text or "") + "".join(c.argument_text() for c in turn.tool_calls)
        yield Finish("tool_calls" if turn.tool_calls else "stop", _usage(request, answer, turn))


def _usage(request: ModelRequest, answer: str, turn: ScriptedTurn | None) -> Usage:
    if turn is not None and turn.usage is not None:
        return Usage(**turn.usage.model_dump())
    return Usage(input_tokens=estimate_request(request), output_tokens=estimate_text(answer))


def built_in_summary(request: ModelRequest) -> str:
    """What the scripted model answers to a summary request: the requests and tools it saw."""
    transcript = request.messages[-1].content if request.messages else ""
    asked = [
        line.removeprefix("user: ").strip()[:200]
        for line in transcript.splitlines()
        if line.startswith("user: ")
    ]
    tools = sorted(set(re.findall(r"^assistant called (\w+)", transcript, re.MULTILINE)))
    lines = ["## Goal", *(f"- {a}" for a in asked[-3:] or ["(not stated)"])]
    lines += ["## Done so far", f"- tools used: {', '.join(tools) or 'none'}"]
    return "\n".join(lines) + "\n"
