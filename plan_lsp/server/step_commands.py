"""The hover on a step of the approved plan (the files it changed) and the commands behind
the step lenses (`step_lenses.py`): run the next step or the rest, list the steps, and *Show
changes*, which writes the step's unified diff to a read-only file in the user's state folder
(never in the workspace) and asks the client to show it (`window/showDocument`)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from plan_lsp.core.frontend import Refused
from plan_lsp.plan.checklist import step_lines
from plan_lsp.protocol.params import StepParams, WorkspaceParams
from plan_lsp.protocol.results import (
    CheckpointFile,
    ShowStepChangesResult,
    StepChanges,
    StepInfo,
    StepsResult,
)
from plan_lsp.server import methods
from plan_lsp.server.step_lenses import REVERT, RUN_NEXT, RUN_REST, SHOW_CHANGES, approved_here
from plan_lsp.session.state_home import workspace_state_dir

if TYPE_CHECKING:
    from plan_lsp.core.workspace import WorkspaceCore
    from plan_lsp.server.app import PlanLanguageServer
    from plan_lsp.server.plan_views import PlanViews

DIFF_MODE = 0o444


def hover(views: PlanViews, params: types.HoverParams) -> types.Hover | None:
    """On a step of the approved plan: the files it changed, with +/- lines."""
    from plan_lsp.core.checkpointing import step_changes

    found = views.plan_context(params.text_document.uri)
    if found is None:
        return None
    ctx, path = found
    text = approved_here(ctx, path)
    if text is None or params.position.line not in step_lines(text):
        return None
    n = step_lines(text).index(params.position.line) + 1
    try:
        changes = step_changes(ctx, n)
    except Refused:
        return types.Hover(contents=f"Step {n} has not run yet.")
    files = [f"- `{f.path}` ({f.status}, +{f.added} -{f.removed})" for f in changes.files]
    body = "\n".join(files) or "No file changes."
    return types.Hover(
        contents=types.MarkupContent(
            kind=types.MarkupKind.Markdown, value=f"**Step {n} changed**\n\n{body}"
        )
    )


# -- commands ------------------------------------------------------------------------------------


def run_next_step(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    p = methods.parse_params(StepParams, params)
    ctx = methods.context_for(ls, p)
    ctx.stepping.run_next(p.step)
    return ctx.state().model_dump(mode="json")


def run_rest(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    ctx = methods.context_for(ls, methods.parse_params(WorkspaceParams, params))
    ctx.stepping.run_rest()
    return ctx.state().model_dump(mode="json")


def steps(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    """`planLsp/steps`: each checklist item with where it is and what it changed."""
    from plan_lsp.core.checkpointing import step_changes, step_states

    ctx = methods.context_for(ls, methods.parse_params(WorkspaceParams, params))
    out = []
    for state in step_states(ctx):
        files: list[CheckpointFile] = []
        if state.checkpointId is not None and state.state != "not_reached":
            with contextlib.suppress(Refused):
                files = step_changes(ctx, state.step).files
        out.append(StepInfo(**state.model_dump(), files=files))
    result = StepsResult(steps=out, stepping=ctx.stepping.progress())
    return result.model_dump(mode="json")


def write_diff(ctx: WorkspaceCore, changes: StepChanges) -> Path:
    """The step's diff as a read-only file in the user's state folder (replaced whole)."""
    folder = workspace_state_dir(ctx.root) / "step-diffs"
    folder.mkdir(mode=0o700, exist_ok=True)
    target = folder / f"{ctx.session.id}-step{changes.step}.diff"
    fd, temp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(changes.diff or f"# step {changes.step}: no text changes\n")
        os.chmod(temp, DIFF_MODE)
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return target


async def show_step_changes(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    from plan_lsp.core.checkpointing import step_changes

    p = methods.parse_params(StepParams, params)
    ctx = methods.context_for(ls, p)
    if p.step is None:
        raise Refused("name the step whose changes to show (step: 1, 2, …)")
    changes = step_changes(ctx, p.step)
    path = write_diff(ctx, changes)
    uri = path.as_uri()
    shown = await ls.client.show_document(uri, take_focus=True)
    if not shown:
        ls.client.show(f"The changes of step {p.step} are in {path}")
    result = ShowStepChangesResult(**changes.model_dump(), uri=uri, shown=shown)
    return result.model_dump(mode="json")


COMMANDS = {
    REVERT: methods.revert,
    RUN_NEXT: run_next_step,
    RUN_REST: run_rest,
    SHOW_CHANGES: show_step_changes,
}
REQUESTS = {"planLsp/steps": steps}
