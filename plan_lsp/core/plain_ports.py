"""Ports for a front-end without editor buffers (the ACP agent, tests): every document is
closed, plans go to disk through the plan tools alone, and a draft's progress is told as
`planDraft` updates."""

from __future__ import annotations

import time
from pathlib import Path

from plan_lsp.core.frontend import Notify
from plan_lsp.policy.ports import FileEdit

# planDraft progress updates at most this often.
DRAFT_NOTIFY_INTERVAL_S = 0.25


class NoEditor:
    """`EditorPort` with no open document: the tools read and write the disk."""

    def open_document_text(self, path: Path) -> str | None:
        return None

    def open_document_paths(self) -> list[Path]:
        return []

    async def apply_to_open_document(self, edit: FileEdit) -> bool:
        return False


class DraftProgress:
    """`PlanDraftPort` without a buffer: the plan tools write the file; the front-end hears
    that a draft began, how far it is, and that it is written."""

    def __init__(self, notify: Notify) -> None:
        self.notify = notify
        self._chars: dict[Path, int] = {}
        self._runs: dict[Path, str] = {}
        self._last: float = 0.0

    def _tell(self, path: Path, status: str) -> None:
        self.notify(
            {
                "runId": self._runs.get(path),
                "kind": "planDraft",
                "uri": path.as_uri(),
                "status": status,
                "chars": self._chars.get(path, 0),
            }
        )

    async def begin(self, run_id: str, path: Path) -> None:
        self._chars[path] = 0
        self._runs[path] = run_id
        self._tell(path, "drafting")

    async def show(self, path: Path) -> None:
        return None

    def feed(self, path: Path, arguments_delta: str) -> None:
        if path not in self._chars:
            return
        self._chars[path] += len(arguments_delta)
        now = time.monotonic()
        if now - self._last >= DRAFT_NOTIFY_INTERVAL_S:
            self._last = now
            self._tell(path, "drafting")

    async def abandon(self, path: Path) -> None:
        self._chars.pop(path, None)
        self._runs.pop(path, None)

    async def complete(self, path: Path, content: str) -> None:
        self._chars.pop(path, None)
        self._runs.pop(path, None)

    def buffer_text(self, path: Path) -> str | None:
        return None
