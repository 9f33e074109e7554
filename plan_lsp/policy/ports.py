"""Ports through which policy decisions reach the user and the editor.

`server/` implements them over LSP; tests implement them in memory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

PermissionAnswer = Literal["allow_once", "allow_always", "reject_once", "reject_always"]


class PermissionRequest(BaseModel):
    run_id: str
    tool: str
    summary: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class PermissionPort(Protocol):
    async def request_permission(self, request: PermissionRequest) -> PermissionAnswer:
        """Ask the user; a dismissed prompt answers reject_once."""


class FileEdit(BaseModel):
    """A WorkspaceEdit-shaped change to one file, expressed as its whole new text."""

    path: Path
    new_text: str
    # The text the change was computed against (None = the file did not exist).
    old_text: str | None = None


class EditorPort(Protocol):
    """What the editor offers below `server/`: open buffers and edits applied through it."""

    def open_document_text(self, path: Path) -> str | None:
        """The text of the open buffer for `path`, or None if the client has it closed."""

    async def apply_to_open_document(self, edit: FileEdit) -> bool:
        """Apply through `workspace/applyEdit`; False if the client refused."""
