"""Coalescing a streaming plan draft into at most one editor edit per frame."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from plan_lsp.plan.streaming import PartialArgumentsReader, TextChange, compute_edit

DEFAULT_INTERVAL_S = 1 / 60


class DraftCoalescer:
    """Turns a draft that changes at any rate into at most one edit per `interval`.

    Producer side (on the event loop's thread): `feed(arguments_delta)` with the raw
    `plan_write` argument text (decoded by `reader`), or `set_text(full_text)`; then
    `finish(final_text)` when the tool call ends. Consumer side: `await next_edit()` (or
    `async for edit in edits()`) returns an edit that turns the client's text into the
    current draft and assumes the client applied it. If the client refused it, call
    `rebase(client_text)` with what the client really holds; the next edit is computed
    against that. After `finish`, edits continue until the client's text equals the final
    text exactly; then `next_edit` returns None.

    Nothing is sent before the draft has begun (the `content` string opened, or a text
    set), so a client's old document stays untouched while e.g. `plan_filename` streams.
    """

    def __init__(
        self,
        client_text: str = "",
        *,
        interval: float = DEFAULT_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.reader = PartialArgumentsReader()
        self._client_text = client_text
        self._explicit_text: str | None = None
        self._interval = interval
        self._clock = clock
        self._sleep = sleep
        self._last_edit_at: float | None = None
        self._finished = False
        self._wakeup = asyncio.Event()
        self.edits_sent = 0

    @property
    def client_text(self) -> str:
        """What the client is believed to hold."""
        return self._client_text

    @property
    def target(self) -> str | None:
        """The draft as far as it is known; None before it has begun."""
        if self._explicit_text is not None:
            return self._explicit_text
        if self.reader.content_started:
            return self.reader.content_so_far
        return None

    @property
    def finished(self) -> bool:
        return self._finished

    def feed(self, arguments_delta: str) -> None:
        if self._finished:
            return
        self._explicit_text = None
        self.reader.feed(arguments_delta)
        self._wakeup.set()

    def set_text(self, text: str) -> None:
        if self._finished:
            return
        self._explicit_text = text
        self._wakeup.set()

    def finish(self, final_text: str | None = None) -> None:
        """No more input. `final_text` (the parsed `content`) overrides what was streamed."""
        if final_text is not None:
            self._explicit_text = final_text
        self._finished = True
        self._wakeup.set()

    def rebase(self, client_text: str) -> None:
        """The client holds `client_text` (an edit was refused, or the user typed)."""
        self._client_text = client_text
        self._wakeup.set()

    def pending_edit(self) -> TextChange | None:
        """The edit that would be sent now, ignoring the interval; not marked as sent."""
        target = self.target
        return None if target is None else compute_edit(self._client_text, target)

    async def next_edit(self) -> TextChange | None:
        """Wait for the next edit (respecting the interval); None once finished and in sync.

        Only one task may await it at a time.
        """
        while True:
            if self.pending_edit() is not None:
                if self._last_edit_at is not None:
                    wait = self._last_edit_at + self._interval - self._clock()
                    if wait > 0:
                        await self._sleep(wait)  # deltas arriving meanwhile coalesce
                target = self.target
                change = None if target is None else compute_edit(self._client_text, target)
                if target is None or change is None:  # changed while we slept; look again
                    continue
                self._client_text = target
                self._last_edit_at = self._clock()
                self.edits_sent += 1
                return change
            if self._finished:
                return None
            self._wakeup.clear()
            await self._wakeup.wait()

    async def edits(self) -> AsyncIterator[TextChange]:
        while (change := await self.next_edit()) is not None:
            yield change
