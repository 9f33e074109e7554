"""Changes other programs make to plan files on disk, picked up with watchfiles and reflected
in state (while a document is open in the editor, its buffer is the truth)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from plan_lsp.policy.safe_fs import TEMP_PREFIX, disk_text
from plan_lsp.session import PlanStatus

if TYPE_CHECKING:
    from plan_lsp.server.app import PlanLanguageServer
    from plan_lsp.server.workspaces import WorkspaceContext

log = logging.getLogger(__name__)


class PlanWatchers:
    def __init__(self, ls: PlanLanguageServer) -> None:
        self.ls = ls
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    def start(self, contexts: list[WorkspaceContext]) -> None:
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

    async def _watch(self, ctx: WorkspaceContext) -> None:
        # Not recursive: watchfiles follows links while walking, and a repository could ship
        # a link in the plans folder that makes it walk (and watch) all of /usr.
        from watchfiles import awatch

        from plan_lsp.policy.server_dir import ensure_plans_dir

        try:
            plans = ensure_plans_dir(ctx.plans_dir, ctx.root)
        except OSError as exc:
            log.warning("plan changes on disk will not be noticed: %s", exc)
            return
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

    def catch_up(self, ctx: WorkspaceContext) -> None:
        """An approved plan whose file no longer holds the approved text changed before
        watching began (a draft has nothing to compare with: its file is the plan)."""
        path = ctx.session.main_plan_path
        if ctx.session.plan_status is not PlanStatus.APPROVED:
            return
        text = disk_text(path)
        if text is None or ctx.runs.differs_from_approved(text):
            self.on_disk_change(ctx, path)  # which leaves a plan open in the editor alone

    def on_disk_change(self, ctx: WorkspaceContext, path: Path) -> None:
        session = ctx.session
        if self.ls.documents.get(path) is not None:
            return  # open in the editor: the buffer is the truth
        if path.resolve() != session.main_plan_path.resolve():
            return
        text = ctx.runs.plan_text(path)
        if session.plan_status is PlanStatus.APPROVED:
            ctx.runs.approved_text_changed(text)
        ctx.runs.notify(
            {
                "kind": "planDraft",
                "uri": path.as_uri(),
                "status": "changedOnDisk",
                "chars": len(text),
            }
        )
        self.ls.plan_views.refresh(ctx)
