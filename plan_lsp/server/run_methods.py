"""planLsp/prompt, planLsp/cancel, planLsp/approvePlan, planLsp/rejectPlan and the
`planLsp.approvePlan` / `planLsp.rejectPlan` commands."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from lsprotocol import types
from pydantic import Field

from plan_lsp.plan.readiness import check_plan, has_errors
from plan_lsp.plan.review import extract_feedback
from plan_lsp.policy.execution import default_sandbox_probe
from plan_lsp.policy.plan_paths import plan_file_problem, write_plan_file
from plan_lsp.providers.base import ChatMessage, Provider, ProviderError
from plan_lsp.server.app import PlanLanguageServer
from plan_lsp.server.documents import DocumentTracker
from plan_lsp.server.lazy import Implementations
from plan_lsp.server.params import RequestFailed, parse_params
from plan_lsp.server.runs import RunBusy, RunManager
from plan_lsp.server.state_methods import WorkspaceParams, context_for, state_json
from plan_lsp.server.workspaces import WorkspaceContext
from plan_lsp.session import Actor, PermissionMode, TransitionRefused, WorkMode

log = logging.getLogger(__name__)


class PromptParams(WorkspaceParams):
    text: str = Field(min_length=1, max_length=200_000)


class CancelParams(WorkspaceParams):
    runId: str | None = None


class ApproveParams(WorkspaceParams):
    permissionMode: PermissionMode | None = None
    clearContext: bool = False
    execute: bool = True
    # Approve although readiness checks found errors (otherwise the user is asked).
    force: bool = False


class RejectParams(WorkspaceParams):
    feedback: str | None = Field(default=None, max_length=50_000)


class _ErrorProvider:
    """Stands in when the configured provider cannot be built: every run reports why."""

    name = "unavailable"

    def __init__(self, error: ProviderError) -> None:
        self.error = error

    async def stream(self, request: Any) -> Any:
        raise self.error
        yield  # pragma: no cover  (makes this an async generator)


def effective_plan_shell(ctx: WorkspaceContext) -> str:
    configured = ctx.config.plan_shell
    available = default_sandbox_probe()
    if configured is None:
        return "sandboxed" if available else "classified"
    return configured


def runs_for(ls: PlanLanguageServer, ctx: WorkspaceContext) -> RunManager:
    manager = ctx.extras.get("runs")
    if manager is None:
        manager = RunManager(
            ls, ctx, tracker_of(ls), lambda: provider_of(ls, ctx), effective_plan_shell(ctx)
        )
        ctx.extras["runs"] = manager
    assert isinstance(manager, RunManager)
    return manager


def tracker_of(ls: PlanLanguageServer) -> DocumentTracker:
    tracker = getattr(ls, "tracker", None)
    if tracker is None:
        tracker = DocumentTracker(ls)
        ls.tracker = tracker  # type: ignore[attr-defined]
    assert isinstance(tracker, DocumentTracker)
    return tracker


def provider_of(ls: PlanLanguageServer, ctx: WorkspaceContext) -> Provider:
    """One provider per server process (a scripted script is shared by every run)."""
    provider = getattr(ls, "provider", None)
    if provider is None:
        from plan_lsp.providers.factory import make_provider

        cfg = ctx.config
        try:
            provider = make_provider(
                cfg.provider,
                model=cfg.model,
                base_url=cfg.base_url,
                api_key=cfg.api_key.get_secret_value() if cfg.api_key else None,
                script=cfg.script,
                transcript=cfg.transcript,
                temperature=cfg.temperature,
                max_tokens=cfg.max_tokens,
            )
        except ProviderError as exc:
            ls.warn_user(f"plan-lsp: the model provider is not usable: {exc.message}")
            provider = _ErrorProvider(exc)
        ls.provider = provider  # type: ignore[attr-defined]
    return provider


async def _confirm(ls: PlanLanguageServer, message: str, yes: str) -> bool:
    try:
        item = await ls.window_show_message_request_async(
            types.ShowMessageRequestParams(
                type=types.MessageType.Warning,
                message=message,
                actions=[
                    types.MessageActionItem(title=yes),
                    types.MessageActionItem(title="Cancel"),
                ],
            )
        )
    except Exception:
        return False
    return getattr(item, "title", None) == yes


def shell_protection(ctx: WorkspaceContext) -> str:
    """What guards plan-mode shell commands, in words for `SessionState.shellProtection`."""
    plan_shell = effective_plan_shell(ctx)
    if plan_shell == "off":
        return "off: no shell in plan mode"
    if plan_shell == "sandboxed":
        kind = default_sandbox_probe()
        if kind:
            return f"sandboxed: classifier + {kind} (read-only, no network)"
        return "classified: classifier only (no sandbox available here)"
    return "classified: classifier only"


def register(ls: PlanLanguageServer, impl: Implementations) -> None:
    def on_created(ctx: WorkspaceContext) -> None:
        ctx.session.shell_protection = shell_protection(ctx)

    ls.workspaces.on_created.append(on_created)

    @impl.feature(types.SHUTDOWN)
    async def on_shutdown(ls: PlanLanguageServer, params: Any) -> None:
        from plan_lsp.server.plan_watch import stop_watchers

        for ctx in ls.workspaces.all():
            manager = ctx.extras.get("runs")
            if isinstance(manager, RunManager):
                await manager.cancel(None)
        await stop_watchers(ls)

    @impl.feature("planLsp/prompt")
    async def prompt(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
        p = parse_params(PromptParams, params)
        ctx = context_for(ls, p)
        manager = runs_for(ls, ctx)
        session = ctx.session
        if session.mode is WorkMode.PLAN:
            session.set_task(p.text)
        try:
            handle = manager.start("prompt", ChatMessage(role="user", content=p.text))
        except RunBusy as exc:
            raise RequestFailed(str(exc)) from exc
        assert handle.task is not None
        try:
            result = await asyncio.shield(handle.task)
        except asyncio.CancelledError:
            # $/cancelRequest: stop the run, then let the cancellation answer the request.
            await manager.cancel(handle.run_id)
            raise
        return {"runId": result.run_id, "stopReason": result.stop_reason}

    @impl.feature("planLsp/cancel")
    async def cancel(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
        p = parse_params(CancelParams, params)
        ctx = context_for(ls, p)
        await runs_for(ls, ctx).cancel(p.runId)
        return {}

    async def approve(ls: PlanLanguageServer, p: ApproveParams) -> dict[str, Any]:
        ctx = context_for(ls, p)
        manager = runs_for(ls, ctx)
        session = ctx.session
        if manager.current is not None:
            raise RequestFailed("a run is in progress; wait for it or cancel it first")
        path = session.main_plan_path
        text = manager.plan_text(path)
        issues = check_plan(text)
        if has_errors(issues) and not p.force:
            problems = "; ".join(i.message for i in issues if i.severity == "error")
            if not await _confirm(
                ls, f"The plan has problems: {problems}. Approve anyway?", "Approve anyway"
            ):
                return state_json(ctx)
        problem = plan_file_problem(ctx.plans_dir, path, workspace=ctx.root)
        if problem is not None:
            raise RequestFailed(f"cannot approve: the plan cannot be saved: {problem}")
        try:
            approved = session.approve(path, text, p.permissionMode, Actor.USER)
        except TransitionRefused as exc:
            raise RequestFailed(f"cannot approve: {exc}") from exc
        if approved is None:
            ls.window_show_message(
                types.ShowMessageParams(
                    type=types.MessageType.Info,
                    message="This plan is already approved and unchanged; nothing to do.",
                )
            )
            return state_json(ctx)
        write_plan_file(ctx.plans_dir, path, text, workspace=ctx.root)
        if p.execute:
            manager.start_do_run(p.clearContext)
        return state_json(ctx)

    async def reject(ls: PlanLanguageServer, p: RejectParams) -> dict[str, Any]:
        ctx = context_for(ls, p)
        manager = runs_for(ls, ctx)
        session = ctx.session
        if manager.current is not None:
            raise RequestFailed("a run is in progress; wait for it or cancel it first")
        feedback = p.feedback
        if not feedback:
            feedback = extract_feedback(manager.plan_text(session.main_plan_path))
        try:
            session.reject(feedback, Actor.USER)
        except TransitionRefused as exc:
            raise RequestFailed(f"cannot reject: {exc}") from exc
        if feedback:
            manager.start_feedback_run(feedback)
        return state_json(ctx)

    @impl.feature("planLsp/approvePlan")
    async def approve_request(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
        return await approve(ls, parse_params(ApproveParams, params))

    @impl.feature("planLsp/rejectPlan")
    async def reject_request(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
        return await reject(ls, parse_params(RejectParams, params))

    @impl.command("planLsp.approvePlan")
    async def approve_command(ls: PlanLanguageServer, *args: Any) -> dict[str, Any]:
        return await approve(ls, parse_params(ApproveParams, args[0] if args else {}))

    @impl.command("planLsp.rejectPlan")
    async def reject_command(ls: PlanLanguageServer, *args: Any) -> dict[str, Any]:
        return await reject(ls, parse_params(RejectParams, args[0] if args else {}))


def plan_path_of(ctx: WorkspaceContext) -> Path:
    return ctx.session.main_plan_path
