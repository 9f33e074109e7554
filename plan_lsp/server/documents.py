"""Open documents as the server sees them, and edits sent to the client through
`workspace/applyEdit` — versioned against the client's document, recomputed when refused."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path
from pygls.workspace import TextDocument

from plan_lsp.plan.streaming import TextChange, compute_edit
from plan_lsp.policy.ports import FileEdit
from plan_lsp.server.app import PlanLanguageServer

log = logging.getLogger(__name__)

# How long a refused edit waits for the client's didChange before it is recomputed.
REFUSED_EDIT_WAIT_S = 2.0
MAX_EDIT_ATTEMPTS = 5


class DocumentTracker:
    """Finds open documents by path and wakes waiters when one changes."""

    def __init__(self, ls: PlanLanguageServer) -> None:
        self.ls = ls
        self._changed: dict[str, asyncio.Event] = {}

    def document(self, path: Path) -> TextDocument | None:
        target = path.resolve()
        docs = self.ls.workspace.text_documents
        uri = from_fs_path(str(target))
        if uri and uri in docs:
            return docs[uri]  # type: ignore[no-any-return]
        for doc_uri, doc in docs.items():
            fs = to_fs_path(doc_uri)
            if fs and Path(fs).resolve() == target:
                return doc  # type: ignore[no-any-return]
        return None

    def text(self, path: Path) -> str | None:
        doc = self.document(path)
        return doc.source if doc is not None else None

    def changed(self, uri: str) -> None:
        fs = to_fs_path(uri)
        key = str(Path(fs).resolve()) if fs else uri
        event = self._changed.get(key)
        if event is not None:
            event.set()

    def change_event(self, path: Path) -> asyncio.Event:
        key = str(path.resolve())
        event = self._changed.get(key)
        if event is None:
            event = self._changed[key] = asyncio.Event()
        return event

    # -- edits to the client -------------------------------------------------------------------

    async def send_change(self, path: Path, change: TextChange) -> bool:
        """One applyEdit against the document's current version; True if applied."""
        doc = self.document(path)
        if doc is None:
            return False
        self.change_event(path).clear()
        edit = types.WorkspaceEdit(
            document_changes=[
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(
                        uri=doc.uri, version=doc.version
                    ),
                    edits=[
                        types.TextEdit(
                            range=types.Range(
                                start=types.Position(
                                    line=change.start.line, character=change.start.character
                                ),
                                end=types.Position(
                                    line=change.end.line, character=change.end.character
                                ),
                            ),
                            new_text=change.text,
                        )
                    ],
                )
            ]
        )
        try:
            result = await self.ls.workspace_apply_edit_async(
                types.ApplyWorkspaceEditParams(edit=edit, label="plan-lsp")
            )
        except Exception as exc:
            log.warning("applyEdit failed for %s: %s", path, exc)
            return False
        return bool(getattr(result, "applied", False))

    async def wait_for_change(self, path: Path) -> None:
        event = self.change_event(path)
        try:
            await asyncio.wait_for(event.wait(), REFUSED_EDIT_WAIT_S)
        except TimeoutError:
            pass

    async def replace_text(self, path: Path, new_text: str) -> bool:
        """Make the open buffer hold `new_text` with a minimal edit, retrying against the
        client's current text when an edit is refused. Never overwrites with a stale copy:
        each attempt is computed from what the buffer holds now."""
        for _attempt in range(MAX_EDIT_ATTEMPTS):
            current = self.text(path)
            if current is None:
                return False
            change = compute_edit(current, new_text)
            if change is None:
                return True
            if await self.send_change(path, change):
                return True
            await self.wait_for_change(path)
        return False


class LspEditorPort:
    """`EditorPort` over LSP: reads see open buffers; edits go through applyEdit."""

    def __init__(self, tracker: DocumentTracker) -> None:
        self.tracker = tracker

    def open_document_text(self, path: Path) -> str | None:
        return self.tracker.text(path)

    def open_document_paths(self) -> list[Path]:
        """Every open document (grep must search unsaved buffers too)."""
        paths = []
        for uri in list(self.tracker.ls.workspace.text_documents):
            fs = to_fs_path(uri)
            if fs:
                paths.append(Path(fs))
        return paths

    async def apply_to_open_document(self, edit: FileEdit) -> bool:
        return await self.tracker.replace_text(edit.path, edit.new_text)
