"""What a streaming plan draft should be now, and a pace for following it.

The producer feeds the raw `plan_write` argument text as it streams, then
finishes with the final text. The consumer — whoever brings the editor's buffer in step —
asks `await next_text(last)`: it returns the draft as it is now, once it differs from what the
consumer last used (or the draft is finished), and never sooner than `interval` after the
previous answer, so however fast the model streams, the buffer gets at most one change per
interval. Nothing is returned before the draft's content has begun.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from plan_lsp.plan.streaming import PartialArgumentsReader

DEFAULT_INTERVAL_S = 1 / 60


class DraftTarget:
    def __init__(
        self,
        *,
        interval: float = DEFAULT_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.reader = PartialArgumentsReader()
        self._explicit: str | None = None
        self._interval = interval
        self._clock = clock
        self._sleep = sleep
        self._last_at: float | None = None
        self._finished = False
        self._wakeup = asyncio.Event()

    @property
    def text(self) -> str | None:
        """The draft as far as it is known; None before it has begun."""
        if self._explicit is not None:
            return self._explicit
        if self.reader.content_started:
            return self.reader.content_so_far
        return None

    def feed(self, arguments_delta: str) -> None:
        if self._finished:
            return
        self._explicit = None
        self.reader.feed(arguments_delta)
        self._wakeup.set()

    def finish(self, final_text: str | None = None) -> None:
        """No more input. `final_text` (the parsed `content`) overrides what was streamed."""
        if final_text is not None:
            self._explicit = final_text
        self._finished = True
        self._wakeup.set()

    async def next_text(self, last: str | None) -> str | None:
        """The draft once it differs from `last`; None when finished and equal to `last`."""
        if self._last_at is not None:
            wait = self._last_at + self._interval - self._clock()
            if wait > 0:
                await self._sleep(wait)  # deltas arriving meanwhile are taken together
        while True:
            text = self.text
            if text is not None and text != last:
                self._last_at = self._clock()
                return text
            if self._finished:
                return None
            self._wakeup.clear()
            await self._wakeup.wait()
