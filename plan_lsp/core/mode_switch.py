"""Leaving plan mode while a plan is being written: the user is asked first, and nothing is
lost either way.

A switch to build while a planning run is under way (the client's toggle, its status bar,
`planLsp/setMode`) asks "A plan is being written: Keep planning / Stop and switch to build".
Keep planning (or no answer within MODE_SWITCH_ASK_S, or the question dismissed) leaves the
session as it was and says so. Stop ends the planning run, keeps the plan written so far in
its file and buffer as a draft (not a rejection), then switches."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from plan_lsp.core.frontend import FrontEnd
from plan_lsp.policy.safe_fs import disk_text
from plan_lsp.protocol.state import WorkMode
from plan_lsp.session import Actor, TransitionRefused

if TYPE_CHECKING:
    from plan_lsp.core.workspace import WorkspaceCore

log = logging.getLogger(__name__)

# How long a mode switch waits for the user's answer before it keeps planning.
MODE_SWITCH_ASK_S = 60.0
KEEP_PLANNING = "Keep planning"
STOP_AND_BUILD = "Stop and switch to build"
# How long stopping a planning run waits for its end (the run's cancel waits 10 s).
STOP_WAIT_S = 30.0
PLAN_BEING_WRITTEN = "A plan is being written: keep planning, or stop and switch to build?"


async def ask_within(
    frontend: FrontEnd, message: str, options: list[str], timeout: float
) -> tuple[str | None, bool]:
    """(the chosen option or None, whether the user answered in time)."""
    try:
        return await asyncio.wait_for(frontend.ask(message, options, warning=True), timeout), True
    except TimeoutError:
        return None, False


async def may_leave_planning(core: WorkspaceCore) -> bool:
    """Whether a switch to build may go ahead: no planning run, or the user chose to stop it
    (then it is stopped, and its plan kept as a draft)."""
    run = core.runs.current
    if run is None or core.session.mode is not WorkMode.PLAN:
        return True
    answer, in_time = await ask_within(
        core.frontend, PLAN_BEING_WRITTEN, [KEEP_PLANNING, STOP_AND_BUILD], MODE_SWITCH_ASK_S
    )
    if answer != STOP_AND_BUILD:
        why = "" if in_time else f" (no answer within {MODE_SWITCH_ASK_S:g} s)"
        core.frontend.show(f"Still in plan mode{why}: the plan is still being written.")
        return False
    if core.runs.current is run:
        await stop_planning(core, run.run_id)
    return True


async def stop_planning(core: WorkspaceCore, run_id: str) -> None:
    """End the planning run; the plan written so far stays in its file and buffer, as a
    draft the user can go on with (or approve)."""
    session = core.session
    target = session.plan_target(core.plans_dir, None)
    path = Path(target.resolved) if target.ok and target.resolved else None
    written = core.frontend.buffer_text(path) if path is not None else None
    task = core.runs.current.task if core.runs.current is not None else None
    await core.runs.cancel(run_id)
    if task is not None and not task.done():  # a slow end: the draft settles with it
        await asyncio.wait({task}, timeout=STOP_WAIT_S)
    if path is None or not written or not written.strip():
        return  # nothing drafted yet
    # Edits in flight when it stopped may have landed since: the longer draft is kept.
    now = core.frontend.buffer_text(path) or ""
    if now.startswith(written.rstrip("\n")) and len(now) > len(written):
        written = now
    # Stopping the stream put the buffer back as it was before the draft began (and removed
    # a file the server had created for it): the draft goes back into both.
    if core.frontend.buffer_text(path) not in (None, written):
        await core.frontend.edit_and_save(path, written, "plan-lsp: plan")
    if disk_text(path) != written:
        try:
            core.frontend.write_file(path, written)
        except OSError as exc:  # HeldByEditor too: the user's save writes it
            log.info("the stopped plan's draft is in the buffer only: %s", exc)
    try:
        session.plan_drafting(path, Actor.USER)
    except TransitionRefused as exc:
        log.warning("the stopped plan is not marked as a draft: %s", exc)
