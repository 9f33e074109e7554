"""`plan-lsp serve` with timing probes, for the benchmarks (the server's code is unchanged).

Run as `python tests/bench/_instrumented_server.py serve ...` (same argv as `plan-lsp`).
It wraps, in this process only:

- the scripted provider's event stream: the time each model delta is emitted;
- `ClientChannel.apply_edit`: the time each `workspace/applyEdit` leaves the server
  (the change is computed and written to the transport in the same event-loop step);

- the checkpoint store's read-ahead while a plan awaits approval (`prime`);
- the Do run's checkpoint recorder: how long each checkpoint took (`_take`), and each
  side-effect tool call's own time (from its "before" checkpoint's end to its "after" one's
  start);

and adds one request, `bench/timings` → `{"deltas": [[t, kind, chars]], "edits": [[t, chars]],
"checkpoints": [s], "tools": [s], "primes": [s]}`, times from `time.monotonic()`
(CLOCK_MONOTONIC: comparable with the client's clock on the same machine).
"""

from __future__ import annotations

import sys
import time
from collections.abc import AsyncIterator
from typing import Any

from lsprotocol import types

import plan_lsp.server as server_pkg
from plan_lsp.cli import main
from plan_lsp.core.recorder import Recorder
from plan_lsp.providers.base import ModelRequest, StreamEvent, TextDelta, ToolCallArgsDelta
from plan_lsp.providers.scripted import ScriptedProvider, ScriptedTurn
from plan_lsp.server.app import PlanLanguageServer
from plan_lsp.server.client import ClientChannel
from plan_lsp.session.checkpoints import CheckpointStore

DELTAS: list[tuple[float, str, int]] = []
EDITS: list[tuple[float, int]] = []
CHECKPOINTS: list[float] = []
TOOLS: list[float] = []
_TOOL_STARTED: dict[str, float] = {}
PRIMES: list[float] = []

_original_play = ScriptedProvider._play
_original_apply_edit = ClientChannel.apply_edit
_original_create_server = server_pkg.create_server
_original_take = Recorder._take
_original_before = Recorder.before
_original_after = Recorder.after
_original_prime = CheckpointStore.prime


def _timed_prime(self: CheckpointStore) -> None:
    started = time.monotonic()
    try:
        _original_prime(self)
    finally:
        PRIMES.append(time.monotonic() - started)


async def _timed_take(self: Recorder, label: str, **kw: Any) -> Any:
    started = time.monotonic()
    try:
        return await _original_take(self, label, **kw)
    finally:
        CHECKPOINTS.append(time.monotonic() - started)


async def _timed_before(self: Recorder, tool: str, call_id: str, paths: list[str]) -> None:
    await _original_before(self, tool, call_id, paths)
    _TOOL_STARTED[call_id] = time.monotonic()


async def _timed_after(
    self: Recorder, tool: str, call_id: str, paths: list[str], result: Any
) -> Any:
    started = _TOOL_STARTED.pop(call_id, None)
    if started is not None:
        TOOLS.append(time.monotonic() - started)
    return await _original_after(self, tool, call_id, paths, result)


async def _timed_play(
    self: ScriptedProvider, turn_number: int, turn: ScriptedTurn | None, request: ModelRequest
) -> AsyncIterator[StreamEvent]:
    async for event in _original_play(self, turn_number, turn, request):
        if isinstance(event, ToolCallArgsDelta):
            DELTAS.append((time.monotonic(), "args", len(event.delta)))
        elif isinstance(event, TextDelta):
            DELTAS.append((time.monotonic(), "text", len(event.text)))
        yield event


async def _timed_apply_edit(self: ClientChannel, edit: types.WorkspaceEdit, label: str) -> bool:
    chars = 0
    for change in edit.document_changes or []:
        if isinstance(change, types.TextDocumentEdit):
            chars += sum(len(e.new_text) for e in change.edits if isinstance(e, types.TextEdit))
    for edits in (edit.changes or {}).values():
        chars += sum(len(e.new_text) for e in edits)
    EDITS.append((time.monotonic(), chars))
    return await _original_apply_edit(self, edit, label)


def _create_server(cli_overrides: dict[str, Any] | None = None) -> PlanLanguageServer:
    ls = _original_create_server(cli_overrides)

    @ls.feature("bench/timings")
    def timings(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
        return {
            "deltas": list(DELTAS), "edits": list(EDITS),
            "checkpoints": list(CHECKPOINTS), "tools": list(TOOLS), "primes": list(PRIMES),
        }  # fmt: skip

    return ls


ScriptedProvider._play = _timed_play  # type: ignore[method-assign]
ClientChannel.apply_edit = _timed_apply_edit  # type: ignore[method-assign]
server_pkg.create_server = _create_server
Recorder._take = _timed_take  # type: ignore[method-assign]
Recorder.before = _timed_before  # type: ignore[method-assign]
Recorder.after = _timed_after  # type: ignore[method-assign]
CheckpointStore.prime = _timed_prime  # type: ignore[method-assign]

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
