"""Changes other programs make to plan files on disk, picked up with watchfiles and
reflected in state (while a document is open in the editor, its buffer is the truth)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path

from plan_lsp.server.app import PlanLanguageServer
from plan_lsp.server.run_methods import runs_for, tracker_of
from plan_lsp.server.workspaces import WorkspaceContext
from plan_lsp.session import PlanStatus

log = logging.getLogger(__name__)


async def watch_plans(ls: PlanLanguageServer, ctx: WorkspaceContext, stop: asyncio.Event) -> None:
    from watchfiles import awatch

    from plan_lsp.policy.server_dir import ensure_plans_dir

    try:
        plans = ensure_plans_dir(ctx.plans_dir, ctx.root)
    except OSError as exc:
        log.warning("plan changes on disk will not be noticed: %s", exc)
        return
    tracker = tracker_of(ls)
    try:
        async for changes in awatch(plans, debounce=50, step=10, stop_event=stop, recursive=True):
            for _change, raw in changes:
                path = Path(raw)
                if path.name.startswith(".") or path.suffix != ".md":
                    continue  # atomic-write temp files and anything that is not a plan
                on_disk_change(ls, ctx, path, tracker.text(path) is not None)
    except Exception:
        log.exception("watching %s failed; plan changes on disk will not be noticed", plans)


def on_disk_change(
    ls: PlanLanguageServer, ctx: WorkspaceContext, path: Path, is_open: bool
) -> None:
    session = ctx.session
    if is_open or path.resolve() != session.main_plan_path.resolve():
        return
    manager = runs_for(ls, ctx)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        text = ""
    if session.plan_status is PlanStatus.APPROVED:
        manager.approved_text_changed(text)
    manager.notify(
        {"kind": "planDraft", "uri": path.as_uri(), "status": "changedOnDisk", "chars": len(text)}
    )
    refresh = getattr(ls, "refresh_plan_views", None)
    if refresh is not None:
        refresh(ctx)


def start_watchers(ls: PlanLanguageServer) -> None:
    stop = asyncio.Event()
    tasks: list[asyncio.Task[None]] = []
    for ctx in ls.workspaces.all():
        tasks.append(asyncio.ensure_future(watch_plans(ls, ctx, stop)))
    ls.plan_watchers = (stop, tasks)  # type: ignore[attr-defined]


async def stop_watchers(ls: PlanLanguageServer) -> None:
    watchers = getattr(ls, "plan_watchers", None)
    if watchers is None:
        return
    stop, tasks = watchers
    stop.set()
    for task in tasks:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, 2)
