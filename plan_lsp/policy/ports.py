"""Ports through which policy decisions reach the user and the editor (`server/` over LSP)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, Field

from plan_lsp.protocol.state import PermissionAnswer

# A permission request shows at most this much of a file's texts (UTF-8 bytes of before and
# after together); a bigger change is described by its summary alone (`truncated`).
MAX_CHANGE_BYTES = 2 * 1024 * 1024


class FileChange(BaseModel):
    """What an edit call would do to one file, computed by the tool's own code: the text the
    user sees now (the open buffer, else the disk) and the exact text the tool would write."""

    path: Path
    before: str | None  # None: the file does not exist yet
    after: str

    def wire(self, limit: int = MAX_CHANGE_BYTES) -> dict[str, Any]:
        """The change as a request carries it: both texts, or neither and `truncated`."""
        size = sum(len(t.encode("utf-8", "surrogatepass")) for t in (self.before or "", self.after))
        fits = size <= limit
        return {
            "uri": self.path.as_uri(),
            "before": self.before if fits else None,
            "after": self.after if fits else None,
            "truncated": not fits,
        }


# Computes the change a call would make, when asked (None: it cannot be computed).
ChangePreview = Callable[[], Awaitable[FileChange | None]]


class PermissionRequest(BaseModel):
    run_id: str
    tool: str
    summary: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    change: FileChange | None = None  # an edit tool's change, when it can say


class PermissionPort(Protocol):
    async def request_permission(self, request: PermissionRequest) -> PermissionAnswer:
        """Ask the user; a dismissed prompt answers reject_once."""


class FileEdit(BaseModel):
    """A WorkspaceEdit-shaped change to one file, expressed as its whole new text."""

    path: Path
    new_text: str
    old_text: str | None = None  # the text it was computed against (None: no file)


class EditorPort(Protocol):
    """What the editor offers below `server/`: open buffers and edits applied through it."""

    def open_document_text(self, path: Path) -> str | None:
        """The text of the open buffer for `path`, or None if the client has it closed."""

    async def apply_to_open_document(self, edit: FileEdit) -> bool:
        """Apply through `workspace/applyEdit`; False if the client refused."""
