"""A provider wrapper that records every model request as one JSON line.

Each line is `{"seq", "runId", "mode", "tools": [names], "messages": [...]}` (and `"purpose":
"compaction"` for a compaction's summary request) with the messages
exactly as sent (system prompt and per-request reminders included). The line is written and
flushed when `stream()` is called, before the inner provider sees the request, so the file
shows what was asked even if the model call then fails.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from plan_lsp.providers.base import ModelRequest, Provider, ProviderError, StreamEvent


def transcript_record(seq: int, request: ModelRequest) -> dict[str, Any]:
    record: dict[str, Any] = {
        "seq": seq,
        "runId": request.run_id,
        "mode": request.mode,
        "tools": [tool.name for tool in request.tools],
        "messages": [message.to_json() for message in request.messages],
    }
    if request.purpose != "step":
        record["purpose"] = request.purpose  # a compaction's summary request
    return record


class TranscriptProvider:
    def __init__(self, inner: Provider, path: Path | str) -> None:
        self.inner = inner
        self.name = inner.name
        self.path = Path(path)
        self._seq = 0
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Open once up front so an unwritable path is reported at start-up.
            with self.path.open("a", encoding="utf-8"):
                pass
        except OSError as exc:
            raise ProviderError(
                "config", f"cannot write transcript file {self.path}: {exc}"
            ) from exc

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self._seq += 1
        line = json.dumps(transcript_record(self._seq, request), ensure_ascii=False, default=str)
        try:
            # Closing the file per line flushes it: a reader sees complete lines only.
            with self.path.open("a", encoding="utf-8") as out:
                out.write(line + "\n")
        except OSError as exc:
            # Raised on iteration, like every other provider failure.
            return _failing_stream(
                ProviderError("config", f"cannot write transcript file {self.path}: {exc}")
            )
        return self.inner.stream(request)

    async def check(self) -> str:
        return await self.inner.check()

    async def context_window(self) -> int | None:
        return await self.inner.context_window()


async def _failing_stream(error: ProviderError) -> AsyncIterator[StreamEvent]:
    """A stream that fails when first read."""
    none: tuple[StreamEvent, ...] = ()
    for event in none:  # the yield makes this an async generator
        yield event
    raise error
