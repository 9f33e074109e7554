"""`EditorPort` over LSP: the tools read open buffers and change them through the client."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from plan_lsp.policy.ports import FileEdit

if TYPE_CHECKING:
    from plan_lsp.server.documents import DocumentStore


class LspEditorPort:
    def __init__(self, documents: DocumentStore) -> None:
        self.documents = documents

    def open_document_text(self, path: Path) -> str | None:
        return self.documents.text(path)

    def open_document_paths(self) -> list[Path]:
        """Every open document (grep must search unsaved buffers too)."""
        return self.documents.open_paths()

    async def apply_to_open_document(self, edit: FileEdit) -> bool:
        result = await self.documents.edit_and_save(edit.path, edit.new_text, "plan-lsp")
        if result.applied and not result.on_disk and not result.reason:
            self.documents.left_to_save(edit.path)
        return result.applied

    async def write_edited_buffers(self) -> None:
        """Before a command: the edits held in buffers only the user saves go to disk."""
        await self.documents.write_edited_buffers()
