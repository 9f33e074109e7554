"""The approved plan's steps in the editor, in standard LSP: a code lens on each checklist
item (*Revert to before this step* once it ran, *Show changes of this step*, and in step mode
*Run this step* / *Run the rest*). The hover and the commands behind the lenses are in
`step_commands.py`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from plan_lsp.plan.checklist import step_lines
from plan_lsp.protocol.state import PlanStatus

if TYPE_CHECKING:
    from plan_lsp.core.workspace import WorkspaceCore

RUN_NEXT = "planLsp.runNextStep"
RUN_REST = "planLsp.runRest"
SHOW_CHANGES = "planLsp.showStepChanges"
REVERT = "planLsp.revert"


def _lens(line: int, title: str, command: str = "", args: dict[str, Any] | None = None) -> Any:
    at = types.Range(start=types.Position(line, 0), end=types.Position(line, 0))
    return types.CodeLens(
        range=at, command=types.Command(title=title, command=command, arguments=[args or {}])
    )


def approved_here(ctx: WorkspaceCore, path: Path) -> str | None:
    """The plan's text as the user sees it, when it is the approved plan unchanged."""
    session = ctx.session
    approved = session.approved
    if approved is None or session.plan_status is not PlanStatus.APPROVED:
        return None
    if Path(approved.path).resolve() != path:
        return None
    text = ctx.plan_text(path)
    return None if ctx.differs_from_approved(text) else text


def step_lenses(ctx: WorkspaceCore, path: Path) -> list[types.CodeLens]:
    from plan_lsp.core.checkpointing import step_states

    text = approved_here(ctx, path)
    if text is None:
        return []
    running = ctx.session.running
    stepping = ctx.stepping
    out: list[types.CodeLens] = []
    progress = stepping.progress()
    if stepping.active() and progress.summary:
        out.append(_lens(0, progress.summary))
        if not running and progress.nextStep is not None:
            out.append(_lens(0, "Run next step", RUN_NEXT))
            out.append(_lens(0, "Run the rest", RUN_REST))
    for state, line in zip(step_states(ctx), step_lines(text), strict=False):
        n = state.step
        ran = state.checkpointId is not None and state.state != "not_reached"
        if ran and not running:
            revert = {"checkpointId": state.checkpointId}
            out.append(_lens(line, "Revert to before this step", REVERT, revert))
        if ran:
            out.append(_lens(line, "Show changes of this step", SHOW_CHANGES, {"step": n}))
        if stepping.active() and not running and state.state != "done":
            out.append(_lens(line, "Run this step", RUN_NEXT, {"step": n}))
    return out
