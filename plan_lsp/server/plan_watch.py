"""Changes other programs make to plan files on disk, picked up with watchfiles and reflected
in state (while a document is open in the editor, its buffer is the truth)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from plan_lsp.policy.safe_fs import TEMP_PREFIX, disk_text
from plan_lsp.protocol.state import PlanStatus

if TYPE_CHECKING:
    from plan_lsp.core.workspace import WorkspaceCore
    from plan_lsp.server.documents import DocumentStore
    from plan_lsp.server.plan_views import PlanViews

log = logging.getLogger(__name__)


class PlanWatchers:
    def __init__(self, documents: DocumentStore, views: PlanViews) -> None:
        self.documents = documents
        self.views = views
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    def start(self, contexts: list[WorkspaceCore]) -> None:
        if self._stop.is_set():
            return  # shut down before the watchers were due
        for ctx in contexts:
            self._tasks.append(asyncio.ensure_future(self._watch(ctx)))

    async def stop(self) -> None:
        self._stop.set()
        for task in self._tasks:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(task, 2)
        self._tasks.clear()

    async def _watch(self, ctx: WorkspaceCore) -> None:
        # Not recursive: watchfiles follows links while walking, and a repository could ship
        # a link in the plans folder that makes it walk (and watch) all of /usr.
        from watchfiles import awatch

        from plan_lsp.policy.server_dir import plans_dir_once_made

        try:  # not made here: a server that only starts writes nothing into the workspace
            plans = await plans_dir_once_made(ctx.plans_dir, ctx.root, self._stop)
        except OSError as exc:
            log.warning("plan changes on disk will not be noticed: %s", exc)
            return
        if plans is None:
            return  # stopped before the plans directory was made
        caught_up = False
        try:
            # The first yield comes once the watch is in place (changes, or a quiet timeout):
            # a change made before that — watching begins a moment after start-up — is
            # looked for then, so none is missed.
            async for changes in awatch(
                plans,
                debounce=50,
                step=10,
                stop_event=self._stop,
                recursive=False,
                yield_on_timeout=True,
            ):
                if not caught_up:
                    caught_up = True
                    self.catch_up(ctx)
                for _change, raw in changes:
                    path = Path(raw)
                    if path.name.startswith((".", TEMP_PREFIX)) or path.suffix != ".md":
                        continue  # atomic-write temp files and anything that is not a plan
                    self.on_disk_change(ctx, path)
        except Exception:
            log.exception("watching %s failed; plan changes on disk will not be noticed", plans)

    def catch_up(self, ctx: WorkspaceCore) -> None:
        """An approved plan whose file no longer holds the approved text changed before
        watching began (a draft has nothing to compare with: its file is the plan)."""
        path = ctx.session.main_plan_path
        if ctx.session.plan_status is not PlanStatus.APPROVED:
            return
        text = disk_text(path)
        if text is None or ctx.differs_from_approved(text):
            self.on_disk_change(ctx, path)  # which leaves a plan open in the editor alone

    def on_disk_change(self, ctx: WorkspaceCore, path: Path) -> None:
        session = ctx.session
        if self.documents.get(path) is not None:
            return  # open in the editor: the buffer is the truth
        if path.resolve() != session.main_plan_path.resolve():
            return
        text = ctx.plan_text(path)
        if session.plan_status is PlanStatus.APPROVED:
            ctx.approved_text_changed(text)
        ctx.runs.notify(
            {
                "kind": "planDraft",
                "uri": path.as_uri(),
                "status": "changedOnDisk",
                "chars": len(text),
            }
        )
        self.views.refresh()
