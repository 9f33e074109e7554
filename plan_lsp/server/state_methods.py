"""planLsp/state, setMode, toggleMode, setPermissionMode and the planLsp.toggleMode command."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lsprotocol import types
from pydantic import BaseModel, ConfigDict
from pygls.exceptions import JsonRpcInvalidParams
from pygls.uris import to_fs_path

from plan_lsp.server.app import PlanLanguageServer
from plan_lsp.server.lazy import Implementations
from plan_lsp.server.params import RequestFailed, parse_params
from plan_lsp.server.workspaces import WorkspaceContext
from plan_lsp.session import Actor, PermissionMode, TransitionRefused, WorkMode


class WorkspaceParams(BaseModel):
    """Every planLsp/* request may name its workspace folder; the first one by default."""

    model_config = ConfigDict(extra="forbid")

    workspaceUri: str | None = None


class SetModeParams(WorkspaceParams):
    mode: WorkMode


class SetPermissionModeParams(WorkspaceParams):
    permissionMode: PermissionMode


def context_for(ls: PlanLanguageServer, params: WorkspaceParams) -> WorkspaceContext:
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


def state_json(ctx: WorkspaceContext) -> dict[str, Any]:
    return ctx.session.state().model_dump(mode="json")


def refused(exc: TransitionRefused) -> RequestFailed:
    return RequestFailed(f"refused: {exc}")


def register(ls: PlanLanguageServer, impl: Implementations) -> None:
    @impl.feature(types.INITIALIZED)
    def on_initialized(ls: PlanLanguageServer, params: types.InitializedParams) -> None:
        for ctx in ls.workspaces.all():  # restore sessions eagerly; warnings reach the user now
            ctx.session.state()
        from plan_lsp.server.plan_watch import start_watchers

        start_watchers(ls)

    @impl.feature("planLsp/state")
    def state(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
        return state_json(context_for(ls, parse_params(WorkspaceParams, params)))

    @impl.feature("planLsp/setMode")
    async def set_mode(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
        p = parse_params(SetModeParams, params)
        ctx = context_for(ls, p)
        try:
            ctx.session.set_mode(p.mode, Actor.USER)
        except TransitionRefused as exc:
            raise refused(exc) from exc
        return await _after_switch(ls, ctx)

    @impl.feature("planLsp/toggleMode")
    async def toggle_mode(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
        ctx = context_for(ls, parse_params(WorkspaceParams, params))
        ctx.session.toggle_mode(Actor.USER)
        return await _after_switch(ls, ctx)

    @impl.feature("planLsp/setPermissionMode")
    def set_permission_mode(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
        p = parse_params(SetPermissionModeParams, params)
        ctx = context_for(ls, p)
        ctx.session.set_permission_mode(p.permissionMode, Actor.USER)
        return state_json(ctx)

    @impl.command("planLsp.toggleMode")
    async def toggle_mode_command(ls: PlanLanguageServer, *args: Any) -> dict[str, Any]:
        return await toggle_mode(ls, args[0] if args else {})


async def _after_switch(ls: PlanLanguageServer, ctx: WorkspaceContext) -> dict[str, Any]:
    """In plan mode nothing changes: the answer waits until every running call that changes
    the workspace has been stopped, and says which were."""
    cancelled: list[dict[str, Any]] = []
    if ctx.session.mode is WorkMode.PLAN:
        from plan_lsp.server.run_methods import runs_for

        cancelled = await runs_for(ls, ctx).stop_side_effects(
            "the user switched to plan mode while it ran"
        )
    return {**state_json(ctx), "cancelled": cancelled}
