"""The `planLsp/*` requests and the `planLsp.*` commands (docs/protocol.md): each takes the
server and the raw params, validates them against the contract's models, finds the
workspace's core and hands over to the workflow (`plan_lsp/core/workflow.py`). A refusal is
answered as LSP's RequestFailed with its reason where they are registered (`handlers.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from pygls.exceptions import JsonRpcInvalidParams
from pygls.uris import to_fs_path

from plan_lsp.core import workflow
from plan_lsp.protocol.params import (
    ApproveParams,
    CancelParams,
    NewSessionParams,
    PlanRevisionsParams,
    PromptParams,
    RejectParams,
    SetModeParams,
    SetPermissionModeParams,
    WorkspaceParams,
)
from plan_lsp.server.params import parse_params as parse_params

if TYPE_CHECKING:
    from plan_lsp.core.workspace import WorkspaceCore
    from plan_lsp.server.app import PlanLanguageServer


def context_for(ls: PlanLanguageServer, params: WorkspaceParams) -> WorkspaceCore:
    if params.workspaceUri is None:
        return ls.workspaces.get()
    path = to_fs_path(params.workspaceUri)
    if not path or "\x00" in path:
        raise JsonRpcInvalidParams(f"'workspaceUri': not a file URI: {params.workspaceUri[:200]!r}")
    try:
        root = Path(path).resolve()
    except (OSError, ValueError) as exc:
        raise JsonRpcInvalidParams(f"'workspaceUri': cannot be resolved: {exc}") from exc
    if root not in ls.workspaces.roots:
        raise JsonRpcInvalidParams(f"'workspaceUri': not an open workspace folder: {root}")
    return ls.workspaces.get(root)


# -- state and modes ----------------------------------------------------------------------------


def _json(result: BaseModel) -> dict[str, Any]:
    """A result of the core as the wire carries it."""
    return result.model_dump(mode="json")


def get_state(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    return _json(context_for(ls, parse_params(WorkspaceParams, params)).state())


async def set_mode(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    p = parse_params(SetModeParams, params)
    return _json(await workflow.set_mode(context_for(ls, p), p.mode))


async def toggle_mode(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    return _json(await workflow.toggle_mode(context_for(ls, parse_params(WorkspaceParams, params))))


def set_permission_mode(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    p = parse_params(SetPermissionModeParams, params)
    return _json(workflow.set_permission_mode(context_for(ls, p), p.permissionMode))


# -- runs ---------------------------------------------------------------------------------------


async def prompt(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    p = parse_params(PromptParams, params)
    return _json(await workflow.prompt(context_for(ls, p), p.text))


async def retry(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    from plan_lsp.core.retry import retry

    return _json(await retry(context_for(ls, parse_params(WorkspaceParams, params))))


async def cancel(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    p = parse_params(CancelParams, params)
    await context_for(ls, p).runs.cancel(p.runId)
    return {}


async def compact(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    """Compact the conversation now: older tool outputs pruned, older turns summarized."""
    return _json(await workflow.compact(context_for(ls, parse_params(WorkspaceParams, params))))


# -- approval ---------------------------------------------------------------------------------


async def approve(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    p = parse_params(ApproveParams, params)
    return _json(
        await workflow.approve(
            context_for(ls, p),
            plan_uri=p.planUri,
            sha256=p.sha256,
            permission_mode=p.permissionMode,
            clear_context=p.clearContext,
            execute=p.execute,
            force=p.force,
            do_mode=p.doMode,
        )
    )


async def reject(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    p = parse_params(RejectParams, params)
    return _json(await workflow.reject(context_for(ls, p), p.feedback, confirm=p.confirm))


# -- revisions, history, sessions, connection ----------------------------------------------------


def plan_revisions(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    p = parse_params(PlanRevisionsParams, params)
    return _json(workflow.plan_revisions(context_for(ls, p), p.planUri))


def plans(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    return _json(workflow.plans(context_for(ls, parse_params(WorkspaceParams, params))))


async def show_previous_revision(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    result = plan_revisions(ls, params)
    shown = False
    if result["previousUri"]:
        shown = await ls.client.show_document(result["previousUri"], take_focus=True)
        if not shown:
            ls.client.show(f"The previous plan revision is in {to_fs_path(result['previousUri'])}")
    return {**result, "shown": shown}


def history(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    ctx = context_for(ls, parse_params(WorkspaceParams, params))
    from plan_lsp.protocol.updates import HistoryResult

    return _json(HistoryResult(updates=ctx.runs.history()))


def new_session(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    p = parse_params(NewSessionParams, params)
    return _json(workflow.new_session(context_for(ls, p), p.keepApprovedPlan))


async def test_connection(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    return _json(
        await workflow.test_connection(context_for(ls, parse_params(WorkspaceParams, params)))
    )


# -- checkpoints of the Do run ---------------------------------------------------------------


def checkpoints(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    from plan_lsp.core import checkpointing

    core = context_for(ls, parse_params(WorkspaceParams, params))
    return _json(checkpointing.list_checkpoints(core))


async def revert(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    from plan_lsp.core import checkpointing
    from plan_lsp.protocol.params import RevertParams

    p = parse_params(RevertParams, params)
    return _json(await checkpointing.revert(context_for(ls, p), p.checkpointId))


async def redo(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    from plan_lsp.core import checkpointing

    return _json(await checkpointing.redo(context_for(ls, parse_params(WorkspaceParams, params))))
