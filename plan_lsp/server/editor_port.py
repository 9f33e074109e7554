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
        return result.applied
