"""Live plan drafts: the plan document comes up in the editor and the draft follows the model
into its buffer, one confirmed edit at a time (`DocumentStore.replace`).

How the plan reaches the editor depends on what the client can do:
- already open: the draft streams into the buffer;
- `window/showDocument`: the server shows it (without taking focus) once the draft has
  content, then streams into the buffer the client opens;
- no showDocument: a no-op `workspace/applyEdit` on the plan file makes editors such as Neovim
  load and open it (not eglot 1.9, which would ask first, nor lsp-mode, which would load it
  into a hidden buffer it does not open: see `ClientSupport.opens_on_edit`), and a
  `window/showMessage` names the file; whenever the client opens it, the rest of the draft
  streams there, and until then it goes to disk when complete.

The plan file is created (empty, filled by edits) when the draft begins under a name that
passed validation, before the client hears of the draft: whatever shows it (the client on the
"drafting" update, or `window/showDocument`) opens a file that exists. If the model then names
another file (or the call is dropped), the file the server created is removed again, so no
wrong or empty plan is ever left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from plan_lsp.plan.coalescer import DraftTarget
from plan_lsp.plan.text import as_lines
from plan_lsp.policy.safe_fs import disk_text
from plan_lsp.server.open_document import OpenDocument, uri_of

if TYPE_CHECKING:
    from plan_lsp.core.frontend import WriteFile
    from plan_lsp.server.client import ClientChannel
    from plan_lsp.server.documents import DocumentStore

log = logging.getLogger(__name__)

# planDraft progress notifications for clients that show the plan elsewhere.
DRAFT_NOTIFY_INTERVAL_S = 0.25
# How long the server waits for the client to open a document it was asked to show.
OPEN_WAIT_S = 5.0


@dataclass
class _Stream:
    run_id: str
    path: Path
    target: DraftTarget
    original: str
    # The open document the draft could not be put into (closed, or edits unconfirmed).
    refused_by: OpenDocument | None = None
    # The server created the (empty) plan file for this draft: undone if it is abandoned.
    created: bool = False
    pump: asyncio.Task[None] | None = None
    last_notice: float = 0.0
    # The plan was open in the editor before the draft began (not brought up for it).
    was_open: bool = False


class LspPlanDrafts:
    """`PlanDraftPort` over LSP."""

    def __init__(
        self,
        client: ClientChannel,
        documents: DocumentStore,
        write_file: WriteFile,
        notify: Callable[[dict[str, Any]], None],
    ) -> None:
        self.client = client
        self.documents = documents
        self.write_file = write_file
        self.notify = notify
        self._streams: dict[Path, _Stream] = {}
        self._named_to_user: set[Path] = set()

    async def begin(self, run_id: str, path: Path) -> None:
        old = self._streams.pop(path, None)
        if old is not None and old.pump is not None:
            old.target.finish()
            await old.pump
        current = self.buffer_text(path)
        if current is None:
            current = _read(path) or ""
        stream = _Stream(run_id, path, DraftTarget(), current)
        stream.was_open = self.documents.get(path) is not None
        self._streams[path] = stream
        self._create(stream)  # before the "drafting" update: a client may show it on that
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

    async def _pump(self, stream: _Stream) -> None:
        documents = self.documents
        sent: str | None = None
        brought_up = False
        try:
            while (text := await stream.target.next_text(sent)) is not None:
                if not brought_up:
                    brought_up = True
                    await self._bring_up(stream)
                    # The draft grew while the editor came up: the first edit carries all
                    # of it, not the line that started the bring-up.
                    text = stream.target.text or text
                sent = text
                # Whenever the user opens the plan (the server may only have named it), the
                # rest of the draft streams into that buffer.
                doc = documents.get(stream.path)
                if doc is None or doc is stream.refused_by:
                    continue
                # Whole lines, as line-based editors hold them: a draft that ends mid-line
                # is shown with a line break after it (Vim and Neovim would add one anyway).
                if not await documents.replace(stream.path, as_lines(text), "plan-lsp: draft"):
                    documents.defect(stream.path, "the draft continues on disk only")
                    stream.refused_by = doc
        except Exception:
            log.exception("plan draft stream for %s failed", stream.path)

    async def _bring_up(self, stream: _Stream) -> bool:
        """Open the plan in the editor; True when its buffer is open in the client.

        A plan that was not open when the draft began is shown even if the client has opened
        it since (on the "drafting" update): the answer comes once its editor is ready, and
        an edit sent before would wait behind the editor's coming up (an editor's first
        Markdown document of a window: a second or more) carrying only the draft's first
        line, with the rest one more round trip behind it.
        """
        documents, client = self.documents, self.client
        path = stream.path
        if stream.was_open and documents.get(path) is not None:
            return True
        self._create(stream)
        uri = uri_of(path)
        asked = time.monotonic()
        shown = await client.show_document(uri, take_focus=False)
        log.debug("showDocument %s answered %s in %.3f s", uri, shown, time.monotonic() - asked)
        if shown:
            return await self._wait_open(path)  # the draft streams from its start
        if documents.get(path) is not None:
            return True  # opened by the client (on the "drafting" update, or the user)
        # Not shown (no showDocument, or the client said no or answered null):
        if client.support.apply_edit and client.support.opens_on_edit:
            # A change that changes nothing still makes Neovim load and open the file.
            noop = types.TextEdit(
                range=types.Range(start=types.Position(0, 0), end=types.Position(0, 0)), new_text=""
            )
            await client.apply_edit(types.WorkspaceEdit(changes={uri: [noop]}), "plan-lsp: plan")
        if path not in self._named_to_user:
            self._named_to_user.add(path)
            client.show(f"plan-lsp is writing the plan to {path}")
        return documents.get(path) is not None

    def _create(self, stream: _Stream) -> None:
        """Editors show files: an empty one under the validated name, filled by edits
        (removed again if the draft is abandoned)."""
        if stream.path.exists():
            return
        try:
            self.write_file(stream.path, "")
        except OSError as exc:
            log.warning("cannot create %s for the draft: %s", stream.path, exc)
            return
        stream.created = True

    async def _wait_open(self, path: Path, timeout: float = OPEN_WAIT_S) -> bool:
        documents = self.documents
        if documents.get(path) is not None:
            return True
        opened = asyncio.Event()

        def _seen(doc: Any) -> None:
            if doc.path == path and not doc.closed:
                opened.set()

        documents.on_change(_seen)
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(opened.wait(), timeout)
        finally:
            documents.remove_listener(_seen)
        return documents.get(path) is not None

    async def show(self, path: Path) -> None:
        """The plan is on disk now: bring it up in the editor if it is not open yet."""
        if self.documents.get(path) is None:
            await self.client.show_document(uri_of(path), take_focus=False)

    def feed(self, path: Path, arguments_delta: str) -> None:
        stream = self._streams.get(path)
        if stream is None:
            return
        stream.target.feed(arguments_delta)
        now = time.monotonic()
        if now - stream.last_notice >= DRAFT_NOTIFY_INTERVAL_S:
            stream.last_notice = now
            self.notify(
                {
                    "runId": stream.run_id,
                    "kind": "planDraft",
                    "uri": path.as_uri(),
                    "status": "drafting",
                    "chars": len(stream.target.text or ""),
                }
            )

    async def _finish(self, path: Path, text: str) -> None:
        stream = self._streams.pop(path, None)
        documents = self.documents
        if stream is not None:
            stream.target.finish(text)
            if stream.pump is not None:
                with contextlib.suppress(Exception):
                    await stream.pump
        # Whatever the stream achieved, an open buffer must end up holding exactly `text`.
        if documents.get(path) is not None and documents.text(path) != text:
            await documents.replace(path, text, "plan-lsp: plan")

    async def complete(self, path: Path, content: str) -> None:
        await self._finish(path, content)
        if self.documents.get(path) is not None:
            await self.documents.save(path)

    async def abandon(self, path: Path) -> None:
        stream = self._streams.get(path)
        if stream is None:
            return
        await self._finish(path, stream.original)
        if stream.created:
            # The draft was not for this file after all: the file the server created for it
            # goes (an editor showing it sees it deleted), so no wrong name is left behind.
            with contextlib.suppress(OSError):
                if path.is_file() and not path.is_symlink():
                    path.unlink()

    def buffer_text(self, path: Path) -> str | None:
        return self.documents.text(path)


def _read(path: Path) -> str | None:
    return disk_text(path)  # never through a link, never blocked on, bounded
