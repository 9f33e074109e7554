"""The todo list mirrored into the approved plan while it is carried out: into the editor's
buffer (confirmed, then saved) and on disk, before the run that changed it reports done."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from plan_lsp.core.frontend import BufferEdit, HeldByEditor
from plan_lsp.plan.checklist import mirror_todos
from plan_lsp.policy.safe_fs import disk_text
from plan_lsp.protocol.state import PlanStatus

if TYPE_CHECKING:
    from plan_lsp.core.parts import WorkspaceParts

log = logging.getLogger(__name__)

# How long the end of a run waits for the last checklist edit to be confirmed by the client
# and saved; after that the disk gets the checklist from the server and the run ends.
CHECKLIST_SETTLE_S = 10.0


class ChecklistMirror:
    """One worker at a time, always towards the latest list; what its last edit came to."""

    def __init__(self, core: WorkspaceParts) -> None:
        self.core = core
        self._task: asyncio.Task[None] | None = None
        self._stale = False
        self._outcome: BufferEdit | None = None

    def changed(self) -> None:
        """The todo list changed: mirror it into the plan. Each pass is computed from the
        buffer as the previous edit left it and from the latest list, so marks never arrive
        out of order and the last list is always the one that lands."""
        self._stale = True
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._until_current())

    async def _until_current(self) -> None:
        while self._stale:
            self._stale = False
            try:
                self._outcome = await self._mirror()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.exception("could not mirror the todo list into the plan")
                self._outcome = BufferEdit(False, reason=str(exc))

    def _todos(self) -> list[tuple[str, str]]:
        return [(t.content, t.status) for t in self.core.session.todos]

    async def _mirror(self) -> BufferEdit | None:
        """Make the plan show the todo list; None when it already did."""
        core = self.core
        if core.session.approved is None:
            return None
        path = Path(core.session.approved.path)
        current = core.plan_text(path)
        mirrored = mirror_todos(current, self._todos())
        if mirrored == current:
            return None
        if core.frontend.buffer_text(path) is not None:
            return await core.frontend.edit_and_save(path, mirrored, "plan-lsp: checklist")
        core.frontend.write_file(path, mirrored)
        return BufferEdit(True, on_disk=True)

    async def settle(self) -> None:
        """Wait until the todo list's last state is in the plan's buffer (the client
        confirmed the edit) and on disk, at most CHECKLIST_SETTLE_S: a client that never
        answers delays the end of a run by that much, not forever. Whatever did not reach
        the buffer by then, the disk gets from the server (logged)."""
        task = self._task
        if task is None:
            return
        reason = ""
        try:
            if not task.done():
                await asyncio.wait_for(asyncio.shield(task), CHECKLIST_SETTLE_S)
            # Settled: the next run's end has nothing of this one's to wait for.
            self._task = None
            outcome, self._outcome = self._outcome, None
            if outcome is None or (outcome.applied and outcome.on_disk):
                return
            if outcome.applied and outcome.reason:
                # In the buffer, with the user's unsaved changes: they save it with them.
                return
            reason = outcome.reason or "the buffer could not be saved"
        except TimeoutError:
            reason = f"the editor did not confirm it within {CHECKLIST_SETTLE_S:g} s"
        except asyncio.CancelledError:
            return  # the run itself is being stopped
        self._to_disk(reason)

    def _to_disk(self, reason: str) -> None:
        """The todo list's marks in the plan file, written by the server."""
        session = self.core.session
        if session.approved is None or session.plan_status is not PlanStatus.APPROVED:
            return
        path = Path(session.approved.path)
        disk = disk_text(path)
        if disk is None:
            return
        mirrored = mirror_todos(disk, self._todos())
        if mirrored == disk:
            return
        try:
            self.core.frontend.write_file(path, mirrored)
        except HeldByEditor:
            log.info("the checklist is in the buffer of %s; the user's save writes it", path)
            return
        except OSError as exc:
            log.warning(
                "the checklist reached neither the buffer nor %s: %s (%s)", path, exc, reason
            )
            return
        log.warning("the checklist reached %s on disk only: %s", path, reason)

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
