"""Live plan drafts: the plan document is opened in the editor and the draft streams into
it as coalesced incremental `workspace/applyEdit` changes while the model writes."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types

from plan_lsp.plan.coalescer import DraftCoalescer
from plan_lsp.server.app import PlanLanguageServer
from plan_lsp.server.documents import DocumentTracker

log = logging.getLogger(__name__)

# planDraft progress notifications for clients that show the plan elsewhere.
DRAFT_NOTIFY_INTERVAL_S = 0.25


@dataclass
class _Stream:
    run_id: str
    path: Path
    coalescer: DraftCoalescer
    original: str
    pump: asyncio.Task[None] | None = None
    last_notice: float = 0.0
    stats: dict[str, int] = field(default_factory=lambda: {"edits": 0, "refused": 0})


class LspPlanDrafts:
    """`PlanDraftPort` over LSP."""

    def __init__(
        self,
        ls: PlanLanguageServer,
        tracker: DocumentTracker,
        notify: Callable[[dict[str, Any]], None],
    ) -> None:
        self.ls = ls
        self.tracker = tracker
        self.notify = notify
        self._streams: dict[Path, _Stream] = {}

    def _client_shows_documents(self) -> bool:
        try:
            window = self.ls.client_capabilities.window
        except Exception:
            return False
        return bool(window and window.show_document and window.show_document.support)

    async def begin(self, run_id: str, path: Path) -> None:
        old = self._streams.pop(path, None)
        if old is not None and old.pump is not None:
            old.coalescer.finish()
            await old.pump
        # No file is created here: until plan_write validated the final name and saved
        # the plan, a new plan lives only in the editor's buffer.
        await self.show(path)
        current = self.tracker.text(path)
        if current is None:
            try:
                current = path.read_text(encoding="utf-8")
            except OSError:
                current = ""
        stream = _Stream(run_id, path, DraftCoalescer(current), current)
        self._streams[path] = stream
        stream.pump = asyncio.create_task(self._pump(stream))
        self.notify(
            {
                "runId": run_id,
                "kind": "planDraft",
                "uri": path.as_uri(),
                "status": "drafting",
                "chars": 0,
            }
        )

    async def show(self, path: Path) -> None:
        if self.tracker.document(path) is not None or not self._client_shows_documents():
            return
        try:
            await asyncio.wait_for(
                self.ls.window_show_document_async(
                    types.ShowDocumentParams(uri=path.as_uri(), take_focus=False)
                ),
                10,
            )
        except Exception as exc:
            log.info("client did not show %s: %s", path, exc)

    async def _pump(self, stream: _Stream) -> None:
        coalescer = stream.coalescer
        try:
            while (change := await coalescer.next_edit()) is not None:
                if self.tracker.document(stream.path) is None:
                    continue  # not open in the client: only the final text goes to disk
                if await self.tracker.send_change(stream.path, change):
                    stream.stats["edits"] += 1
                    continue
                stream.stats["refused"] += 1
                await self.tracker.wait_for_change(stream.path)
                current = self.tracker.text(stream.path)
                if current is not None:
                    coalescer.rebase(current)
        except Exception:
            log.exception("plan draft stream for %s failed", stream.path)

    def feed(self, path: Path, arguments_delta: str) -> None:
        stream = self._streams.get(path)
        if stream is None:
            return
        stream.coalescer.feed(arguments_delta)
        now = time.monotonic()
        if now - stream.last_notice >= DRAFT_NOTIFY_INTERVAL_S:
            stream.last_notice = now
            target = stream.coalescer.target or ""
            self.notify(
                {
                    "runId": stream.run_id,
                    "kind": "planDraft",
                    "uri": path.as_uri(),
                    "status": "drafting",
                    "chars": len(target),
                }
            )

    async def _finish(self, path: Path, text: str) -> None:
        stream = self._streams.pop(path, None)
        if stream is None:
            if self.tracker.document(path) is not None:
                await self.tracker.replace_text(path, text)
            return
        stream.coalescer.finish(text)
        if stream.pump is not None:
            with contextlib.suppress(Exception):
                await stream.pump
        # Whatever the stream achieved, the buffer must end up holding exactly `text`.
        if self.tracker.document(path) is not None and self.tracker.text(path) != text:
            await self.tracker.replace_text(path, text)

    async def complete(self, path: Path, content: str) -> None:
        await self._finish(path, content)

    async def abandon(self, path: Path) -> None:
        stream = self._streams.get(path)
        if stream is not None:
            await self._finish(path, stream.original)

    def buffer_text(self, path: Path) -> str | None:
        return self.tracker.text(path)

    def stats(self, path: Path) -> dict[str, int] | None:
        stream = self._streams.get(path)
        return dict(stream.stats) if stream else None
