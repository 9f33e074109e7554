"""Making the disk hold what an open buffer holds, the way each kind of client allows: the
client saves it when asked (`planLsp/saveDocument`), or writes a buffer it renames (coc.nvim),
or the server writes the file; around a file written behind a buffer (a revert), the file's
time is what the editor knows, so that the editor does not take the file for newer."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from plan_lsp.core.frontend import HeldByEditor
from plan_lsp.policy.safe_fs import disk_text  # never through a link, never blocked on
from plan_lsp.server.open_document import DiskWriter, OpenDocument, mtime_of, uri_of

if TYPE_CHECKING:
    from plan_lsp.server.client import ClientChannel

log = logging.getLogger(__name__)


class BufferSaves:
    """The ways to bring a file to its buffer's text, for one client."""

    def __init__(self, client: ClientChannel, write_disk: DiskWriter) -> None:
        self.client = client
        self.write_disk = write_disk

    async def by_renaming(self, doc: OpenDocument, path: Path) -> bool:
        """Have a client that saves only when the user does (coc.nvim) write the buffer
        itself: Vim asks about a file written behind a modified buffer (W12), but coc writes
        a buffer it renames (`noa write!`). Renamed to a name beside it and back (one
        workspace edit, undone whole if a part fails), the buffer is saved under its own
        name, with the file time Vim knows. False when the client cannot rename."""
        caps = self.client.ls.client_capabilities.workspace
        edits = caps.workspace_edit if caps is not None else None
        renames = (edits.resource_operations or []) if edits is not None else []
        if not self.client.support.user_saves or types.ResourceOperationKind.Rename not in renames:
            return False
        uri, aside = uri_of(path), uri_of(path.with_name(f".{path.name}.plan-lsp-save"))
        there = types.RenameFile(old_uri=uri, new_uri=aside)
        back = types.RenameFile(old_uri=aside, new_uri=uri)
        edit = types.WorkspaceEdit(document_changes=[there, back])
        if not await self.client.apply_edit(edit, "plan-lsp: save"):
            return False
        return disk_text(path) == doc.text

    async def saved_over(self, doc: OpenDocument, path: Path) -> bool:
        """Have a client that saves on request (VS Code, Neovim) save a buffer that holds
        the text the server wrote behind it, so that it no longer shows unsaved changes.
        An editor refuses to save over a file newer than the one it read (VS Code: "the
        content of the file is newer"): the file first gets back the time the editor last
        knew it by (its text stays), and the save writes the same text. A file the client
        did not rewrite gets its time back. False when the client did not save."""
        support = self.client.support
        if not support.save_documents or support.asks_about_changed_files:
            return False
        try:
            now = path.lstat()
        except OSError:
            return False
        known = doc.known_mtime
        rewound = known if known is not None and known < now.st_mtime_ns else None
        try:
            if rewound is not None:
                os.utime(path, ns=(now.st_atime_ns, rewound), follow_symlinks=False)
            try:
                saved = await self.client.save_document(doc.uri)
            finally:
                if rewound is not None and mtime_of(path) == rewound:  # not rewritten: time back
                    os.utime(path, ns=(now.st_atime_ns, now.st_mtime_ns), follow_symlinks=False)
        except OSError as exc:
            log.warning("could not set the time of %s around its save: %s", path, exc)
            return False
        if saved:
            doc.known_mtime = mtime_of(path)
        return saved

    def put_back(self, doc: OpenDocument, path: Path, target: str) -> bool:
        """The file holds `target` already, written behind the buffer (a revert), and the
        editor saves when asked but asks the user about a changed file (Emacs: "changed on
        disk; reread?") before taking the edit. The file gets back what the editor last
        read or wrote, with that time; the edit, then the editor's save, bring it to `target`.
        True when the file was put back."""
        support, held = self.client.support, doc.as_held(target)
        if not (support.save_documents and support.asks_about_changed_files):
            return False
        if doc.known_mtime is None or doc.text == held or disk_text(path) != held:
            return False
        try:
            self.write_disk(path, doc.text, behind_buffer=True)
            os.utime(path, ns=(doc.known_mtime, doc.known_mtime), follow_symlinks=False)
        except OSError as exc:
            log.warning("could not put %s back before the edit: %s", path, exc)
            return False
        return disk_text(path) == doc.text

    async def save(self, doc: OpenDocument, path: Path) -> bool:
        text = doc.text
        if disk_text(path) == text:
            return True
        if await self.client.save_document(doc.uri):
            # The editor saved its buffer: the disk holds what the user sees there (which may
            # already include typing the server's copy has not heard of yet) — never
            # overwritten with an older copy.
            doc.known_mtime = mtime_of(path)
            return True
        try:
            self.write_disk(path, text)
        except HeldByEditor as exc:
            log.info("%s: left to the user's save (%s)", path, exc)
            return False
        except OSError as exc:
            log.warning("could not write %s: %s", path, exc)
            return False
        return True
