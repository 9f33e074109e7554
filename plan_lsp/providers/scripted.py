"""The scripted provider: a model that replays a JSON script.

The script belongs to the provider instance, and there is one instance per server process:
every `stream()` call — from any run or subagent — takes the next turn, in the order the
calls are made. Past the last turn the model answers `(end of script)`.

Script format::

    {"chunk": 16,
     "pace"?: Pace,
     "timeline"?: str,
     "turns": [{"text"?: str,
                "tool_calls"?: [{"name": str, "arguments": object | str}],
                "delay_ms"?: int,
                "pace"?: Pace | null,
                "error"?: {"kind": str, "message": str, "retry_after"?: float},
                "usage"?: {"input_tokens": int, "output_tokens": int,
                           "cached_input_tokens"?: int},
                "compaction"?: bool}]}

    Pace = {"chars_per_second": float, "chunk": [min, max], "jitter": float,
            "pause_every_chars": [min, max], "pause_ms": [min, max], "seed": int}

Without a pace, text and arguments stream in `chunk`-character deltas as fast as they are
read (optionally `delay_ms` apart): the fast mode for unit tests. With a pace (the script's,
or a turn's own, which wins; `"pace": null` turns it off for one turn) the turn streams like a
hosted or local model: deltas of a random size in `chunk`, at about `chars_per_second` with
each gap varied by ±`jitter` (a fraction), and a pause of `pause_ms` after every
`pause_every_chars` characters — pauses longer than an editor's debounce. The randomness is
seeded (`seed`, then the turn's number), so a script streams the same way every time.

`timeline`: a file the provider appends one JSON line to per delta,
`{"t": wall-clock seconds, "turn": n, "call": index | null, "kind": "text" | "args",
"sent": characters of that text or call's arguments sent so far}` — what a test compares with
what an editor showed, and when.

Tool arguments given as an object are sent as `json.dumps(arguments)`; given as a string
they are sent verbatim (so a script can send broken JSON). A turn with `error` streams
whatever text and tool calls it has and then raises `ProviderError(kind, message)`.

Every answer reports usage: the turn's `usage`, else the request's and the answer's tokens as
`providers.tokens` estimates them. A compaction's summary request takes the next turn only if
that turn is marked `"compaction": true`; otherwise it is answered with a short built-in
summary and takes no turn, so scripts need not know when compaction happens.
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
        turns = self.script.turns
        if request.purpose == "compaction":
            upcoming = turns[self._calls] if self._calls < len(turns) else None
            if upcoming is None or not upcoming.compaction:
                return self._built_in_summary(request)
        self._calls += 1
        turn_number = self._calls
        turn = turns[turn_number - 1] if turn_number <= len(turns) else None
        return self._play(turn_number, turn, request)

    async def context_window(self) -> int | None:
        return None

    async def _built_in_summary(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """A summary request the script did not plan for: a short, deterministic summary."""
        text = built_in_summary(request)
        for piece in _chunks(text, self.script.chunk):
            yield TextDelta(piece)
        yield Finish("stop", _usage(request, text, None))

    def _pace_of(self, turn: ScriptedTurn) -> Pace | None:
        if "pace" in turn.model_fields_set:
            return turn.pace
        return self.script.pace

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
        self, turn_number: int, turn: ScriptedTurn | None, request: ModelRequest
    ) -> AsyncIterator[StreamEvent]:
        size = self.script.chunk
        if turn is None:
            for piece in _chunks(END_OF_SCRIPT_TEXT, size):
                yield TextDelta(piece)
            yield Finish("stop", _usage(request, END_OF_SCRIPT_TEXT, None))
            return

        pace = self._pace_of(turn)
        rng = random.Random(f"{pace.seed}:{turn_number}") if pace is not None else None
        delay = turn.delay_ms / 1000.0
        first = True

        def pieces(text: str) -> Iterator[tuple[float, str]]:
            nonlocal first
            if pace is not None and rng is not None:
                yield from pace.pieces(text, rng)
                return
            for piece in _chunks(text, size):
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
        return Usage(
            turn.usage.input_tokens, turn.usage.output_tokens, turn.usage.cached_input_tokens
        )
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
