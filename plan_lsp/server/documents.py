"""Open documents as the client holds them, and changes made through the client.

The server keeps its own copy of every open document from `didOpen`/`didChange`, applied
with LSP's line breaks and the negotiated position encoding (`plan/text.py`). Its copy lags
the client by whatever is in flight, so an edit the server sends is never followed by another
computed from a copy that lacks it:

1. one edit at a time per document, versioned with the copy's version;
2. after the client answers `applied: true`, the server waits until the client's `didChange`
   notifications have brought its copy to exactly the expected text (however the client
   debounces, splits or orders them, and whatever its version habits);
3. only then is the next edit computed — from the copy.

An editor that rereads a file (Emacs, when the file changed on disk) closes and reopens its
buffer, and its version starts again: an edit in flight is refused, and the next attempt is
computed from the reopened document, at its version — never given up because the copy it
began with was closed. Edits are serialised per URI, across reopens.

If the copy settles somewhere else (a client that counts columns differently, or the user
typing at the same moment), the copy can no longer be trusted to mean what the client holds,
and the document switches to whole-document replacements: the range (0,0) to past the last
line means the same in every encoding, and the client's report of it is recognised by its
text (it starts at (0,0) and carries exactly the text sent), whatever columns the client puts
in it — so the copy is exact again after each one. A client that never reports an applied
change leaves the document "unconfirmed": nothing more is sent to it.

After an edit, the buffer and the disk are made to agree when the buffer had no unsaved
changes of the user's: the client saves it (`planLsp/saveDocument`, for clients that declared
`saveDocuments`), else the server writes the same text to disk atomically. A buffer brought to
the text a revert already wrote to its file is saved by the client the same way (the file's
time set back to the one the editor knew, so the editor does not take it for newer), and is
left with no unsaved changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from plan_lsp.core.frontend import BufferEdit
from plan_lsp.plan.streaming import TextChange, compute_edit
from plan_lsp.plan.text import (
    ContentChange,
    Encoding,
    LineIndex,
    Position,
    apply_changes,
)
from plan_lsp.policy.safe_fs import disk_text  # never through a link, never blocked on
from plan_lsp.server.buffer_saves import BufferSaves
from plan_lsp.server.open_document import (
    DiskWriter,
    OpenDocument,
    confirmed,
    mtime_of,
    path_of,
)

if TYPE_CHECKING:
    from plan_lsp.server.client import ClientChannel

log = logging.getLogger(__name__)

REFUSED_WAIT_S = 1.0
MAX_EDIT_ATTEMPTS = 6


class DocumentStore:
    """The server's copies of open documents; the one owner of edits sent to the client."""

    def __init__(self, client: ClientChannel, write_disk: DiskWriter) -> None:
        self.client = client
        self.encoding: Encoding = "utf-16"
        self._write_disk = write_disk
        self.saves = BufferSaves(client, write_disk)
        self._by_uri: dict[str, OpenDocument] = {}
        self._by_path: dict[Path, OpenDocument] = {}
        self._listeners: list[Callable[[OpenDocument], None]] = []
        # One lock per URI, kept across close and reopen; set on every didOpen.
        self._locks: dict[str, asyncio.Lock] = {}
        self._opened = asyncio.Event()
        # Buffers the agent's edits changed that only the user's save writes: their text.
        self._left_to_save: dict[Path, str] = {}

    def on_change(self, listener: Callable[[OpenDocument], None]) -> None:
        """Called after every didOpen/didChange/didClose, with the document."""
        self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[OpenDocument], None]) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    # -- the client's notifications ---------------------------------------------------------

    def did_open(self, params: types.DidOpenTextDocumentParams) -> OpenDocument:
        item = params.text_document
        lock = self._locks.setdefault(item.uri, asyncio.Lock())
        doc = OpenDocument(item.uri, path_of(item.uri), item.version, item.text, lock=lock)
        if doc.path is not None and disk_text(doc.path) == item.text:
            doc.known_mtime = mtime_of(doc.path)
        log.debug("didOpen %s (version %s, %d characters)", item.uri, item.version, len(item.text))
        old = self._by_uri.get(item.uri)
        if old is not None:
            old.closed = True
            old.bump()
        self._by_uri[item.uri] = doc
        if doc.path is not None:
            self._by_path[doc.path] = doc
        self._opened.set()
        self._announce(doc)
        return doc

    def did_save(self, params: types.DidSaveTextDocumentParams) -> None:
        """The editor wrote the buffer: the file's time now is the one it knows it by."""
        doc = self._by_uri.get(params.text_document.uri)
        if doc is not None and doc.path is not None and disk_text(doc.path) == doc.text:
            doc.known_mtime = mtime_of(doc.path)

    def did_change(self, params: types.DidChangeTextDocumentParams) -> OpenDocument | None:
        doc = self._by_uri.get(params.text_document.uri)
        if doc is None:
            log.warning("didChange for a document that is not open: %s", params.text_document.uri)
            return None
        changes = []
        for change in params.content_changes:
            if isinstance(change, types.TextDocumentContentChangePartial):
                start = Position(change.range.start.line, change.range.start.character)
                end = Position(change.range.end.line, change.range.end.character)
                changes.append(ContentChange(change.text, start, end))
            else:
                changes.append(ContentChange(change.text))
        base = doc.text
        if doc.pending_full is not None:
            # The client's report of our whole-document replacement: trust its text, not
            # its columns (what came before it described a state the copy cannot map).
            for index in range(len(changes) - 1, -1, -1):
                reported = changes[index]
                if reported.text == doc.pending_full and reported.start in (None, Position(0, 0)):
                    base, changes = doc.pending_full, changes[index + 1 :]
                    doc.pending_full = None
                    break
        doc.text = apply_changes(base, changes, self.encoding)
        version = params.text_document.version
        # A negative version stands for a client's `null`: edits to it go unversioned.
        doc.version = version if version is not None and version >= 0 else None
        log.debug("didChange %s (version %s)", doc.uri, version)
        doc.bump()
        self._announce(doc)
        return doc

    def did_close(self, params: types.DidCloseTextDocumentParams) -> None:
        doc = self._by_uri.pop(params.text_document.uri, None)
        if doc is None:
            return
        if doc.path is not None and self._by_path.get(doc.path) is doc:
            del self._by_path[doc.path]
        doc.closed = True
        doc.bump()
        self._announce(doc)

    def _announce(self, doc: OpenDocument) -> None:
        for listener in list(self._listeners):
            try:
                listener(doc)
            except Exception:
                log.exception("document listener failed")

    # -- queries -----------------------------------------------------------------------------

    def get(self, path: Path) -> OpenDocument | None:
        doc = self._by_path.get(path)
        if doc is None:
            try:
                doc = self._by_path.get(path.resolve())
            except (OSError, RuntimeError):
                return None
        return doc

    def by_uri(self, uri: str) -> OpenDocument | None:
        return self._by_uri.get(uri)

    def text(self, path: Path) -> str | None:
        doc = self.get(path)
        return doc.text if doc is not None else None

    def open_paths(self) -> list[Path]:
        return list(self._by_path)

    def all(self) -> list[OpenDocument]:
        return list(self._by_uri.values())

    # -- edits through the client ------------------------------------------------------------

    async def replace(self, path: Path, target: str, label: str = "plan-lsp") -> bool:
        """Make the open buffer for `path` hold exactly `target`; True when it does (and the
        server's copy confirms it)."""
        doc = self.get(path)
        if doc is None:
            return False
        async with doc.lock:
            return await self._replace(doc, target, label) is not None

    async def _current(self, doc: OpenDocument) -> OpenDocument | None:
        """The open document of `doc`'s URI: `doc`, or what the client reopened it as (its
        didOpen follows the didClose), waited for up to REFUSED_WAIT_S."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + REFUSED_WAIT_S
        while (now := self._by_uri.get(doc.uri)) is None:
            self._opened.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._opened.wait(), max(0.0, deadline - loop.time()))
            if loop.time() >= deadline and self._by_uri.get(doc.uri) is None:
                return None
        if now is not doc:
            log.info("%s was reopened (version %s): edits go on there", doc.uri, now.version)
        return now

    async def _replace(self, doc: OpenDocument, target: str, label: str) -> OpenDocument | None:
        """The document holding `target` at the end (the one the client reopened, if it
        did), None when it could not be brought there."""
        for _attempt in range(MAX_EDIT_ATTEMPTS):
            found = await self._current(doc) if doc.closed else doc
            if found is None or found.unconfirmed:
                return None
            doc = found
            current = doc.text
            held = doc.as_held(target)
            change = compute_edit(current, held, self.encoding)
            if change is None:
                return doc
            if doc.whole_lines:
                change = _whole_document(current, held)
                doc.pending_full = held
            expected = current[: change.start_offset] + change.text + current[change.end_offset :]
            mark = doc.generation
            edit = _edit_for(doc, change, self.client.support.document_changes)
            loop = asyncio.get_running_loop()
            sent_at, version = loop.time(), doc.version
            applied = await self.client.apply_edit(edit, label)
            log.debug(
                "edit of %s (version %s, %d characters) answered applied=%s in %.3f s",
                doc.uri, version, len(change.text), applied, loop.time() - sent_at,
            )  # fmt: skip
            if not applied:
                doc.pending_full = None
                # Refused (the client is ahead of the copy, or declines): let it catch up.
                await doc.wait_for(lambda d=doc, m=mark: d.generation != m, REFUSED_WAIT_S)  # type: ignore[misc]
                continue
            answered_at = loop.time()
            if await confirmed(doc, mark, expected):
                log.debug("edit of %s reported in %.3f s", doc.uri, loop.time() - answered_at)
                continue
            if doc.closed:
                continue  # reopened (or closed) meanwhile: the next attempt looks again
            if doc.generation == mark:
                self.defect(doc.uri, "the client applied an edit but never reported it")
                doc.unconfirmed = True
                return None
            # The copy settled elsewhere: a client counting columns its own way, or typing.
            if not doc.whole_lines:
                self.defect(doc.uri, "edits now replace the whole document (the copy differed)")
            doc.whole_lines = True
        return doc if not doc.closed and doc.text == doc.as_held(target) else None

    def defect(self, where: object, what: str) -> None:
        """A fallback no healthy client should cause (edits fell back to whole-document
        replacements, or a document stopped taking edits): logged as a defect, which the
        editors' tests look for in the server's log."""
        log.warning("document model defect: %s: %s", where, what)

    async def edit_and_save(self, path: Path, target: str, label: str) -> BufferEdit:
        """Change an open buffer to `target`, then make the disk agree if the buffer held
        nothing unsaved of the user's before the change."""
        doc = self.get(path)
        if doc is None:
            return BufferEdit(False, reason="not open")
        async with doc.lock:
            before = doc.text
            clean = disk_text(path) == before or self.saves.put_back(doc, path, target)
            done = await self._replace(doc, target, label)
            if done is None:
                return BufferEdit(False, reason=f"the editor did not apply the change to {path}")
            doc = done
            if not clean:
                # The file holds the text already, written behind the buffer (a revert): the
                # client saves the buffer as it saves the run's own edits, if it can.
                saves = self.saves
                if disk_text(path) == doc.text and (
                    await saves.by_renaming(doc, path) or await saves.saved_over(doc, path)
                ):
                    return BufferEdit(True, on_disk=True)
                return BufferEdit(True, on_disk=False, reason="the buffer has unsaved changes")
            return BufferEdit(True, on_disk=await self.saves.save(doc, path))

    def left_to_save(self, path: Path) -> None:
        """The agent's edit of `path` is in its buffer only (the client saves when the user
        does): `write_edited_buffers` writes it before a command reads the file."""
        doc = self.get(path)
        if doc is not None and disk_text(path) != doc.text:
            self._left_to_save[doc.path or path] = doc.text

    async def write_edited_buffers(self) -> list[Path]:
        """Before a command runs: each buffer the agent edited and only the user's save would
        write goes to disk with its text, so the command reads the edits. A buffer the user
        changed since stays theirs to save. Returns the files written."""
        written: list[Path] = []
        for path, text in list(self._left_to_save.items()):
            del self._left_to_save[path]
            doc = self.get(path)
            if doc is None or doc.text != text or disk_text(path) == text:
                continue
            async with doc.lock:
                try:
                    if not await self.saves.by_renaming(doc, path):
                        self._write_disk(path, doc.text, behind_buffer=True)
                except OSError as exc:
                    log.warning("could not write %s before the command: %s", path, exc)
                    continue
            written.append(path)
        return written

    async def save(self, path: Path) -> bool:
        """Make the disk hold what the open buffer holds (the user's approval, say)."""
        doc = self.get(path)
        if doc is None:
            return False
        async with doc.lock:
            return await self.saves.save(doc, path)


def _whole_document(old: str, new: str) -> TextChange:
    """Replace everything: from (0,0) to past the last line, which every client clamps to
    the end of the document — no column anywhere."""
    return TextChange(
        start=Position(0, 0),
        end=Position(LineIndex(old).line_count, 0),
        text=new,
        start_offset=0,
        end_offset=len(old),
    )


def _edit_for(doc: OpenDocument, change: TextChange, versioned: bool) -> types.WorkspaceEdit:
    edit = types.TextEdit(
        range=types.Range(
            start=types.Position(line=change.start.line, character=change.start.character),
            end=types.Position(line=change.end.line, character=change.end.character),
        ),
        new_text=change.text,
    )
    if not versioned:  # a client without documentChanges takes plain `changes`
        return types.WorkspaceEdit(changes={doc.uri: [edit]})
    identifier = types.OptionalVersionedTextDocumentIdentifier(uri=doc.uri, version=doc.version)
    return types.WorkspaceEdit(
        document_changes=[types.TextDocumentEdit(text_document=identifier, edits=[edit])]
    )
