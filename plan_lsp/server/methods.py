"""The `planLsp/*` requests and the `planLsp.*` commands (docs/protocol.md,
docs/architecture.md): each takes the server and the raw params and returns plain JSON."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.uris import to_fs_path

from plan_lsp.plan.readiness import check_plan, has_errors
from plan_lsp.plan.review import extract_feedback
from plan_lsp.policy.plan_paths import plan_file_problem
from plan_lsp.server.client import HeldByEditor
from plan_lsp.server.params import RequestFailed, parse_params
from plan_lsp.server.runs import RunBusy
from plan_lsp.session import Actor, PlanStatus, TransitionRefused, WorkMode, sha256_text
from plan_lsp.session.protocol import (
    ApproveParams,
    CancelParams,
    NewSessionParams,
    PromptParams,
    RejectParams,
    SetModeParams,
    SetPermissionModeParams,
    WorkspaceParams,
)

if TYPE_CHECKING:
    from plan_lsp.server.app import PlanLanguageServer
    from plan_lsp.server.workspaces import WorkspaceContext

# How long a connection test waits for the model server.
CONNECTION_TEST_S = 20.0


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


def _refused(exc: TransitionRefused) -> RequestFailed:
    return RequestFailed(f"refused: {exc}")


# -- state and modes ----------------------------------------------------------------------------


def get_state(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    return state_json(context_for(ls, parse_params(WorkspaceParams, params)))


async def set_mode(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    p = parse_params(SetModeParams, params)
    ctx = context_for(ls, p)
    try:
        ctx.session.set_mode(p.mode, Actor.USER)
    except TransitionRefused as exc:
        raise _refused(exc) from exc
    return await _after_switch(ctx)


async def toggle_mode(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    ctx = context_for(ls, parse_params(WorkspaceParams, params))
    ctx.session.toggle_mode(Actor.USER)
    return await _after_switch(ctx)


async def _after_switch(ctx: WorkspaceContext) -> dict[str, Any]:
    """In plan mode nothing changes: the answer waits until every running call that changes
    the workspace has been stopped, and says which were."""
    cancelled: list[dict[str, Any]] = []
    if ctx.session.mode is WorkMode.PLAN:
        cancelled = await ctx.runs.stop_side_effects("the user switched to plan mode while it ran")
    return {**state_json(ctx), "cancelled": cancelled}


def set_permission_mode(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    p = parse_params(SetPermissionModeParams, params)
    ctx = context_for(ls, p)
    ctx.session.set_permission_mode(p.permissionMode, Actor.USER)
    return state_json(ctx)


# -- runs ---------------------------------------------------------------------------------------


async def prompt(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    from plan_lsp.providers.base import ChatMessage

    p = parse_params(PromptParams, params)
    ctx = context_for(ls, p)
    if ctx.session.mode is WorkMode.PLAN:
        ctx.session.set_task(p.text)
    try:
        handle = ctx.runs.start("prompt", ChatMessage(role="user", content=p.text), shown=p.text)
    except RunBusy as exc:
        raise RequestFailed(str(exc)) from exc
    assert handle.task is not None
    try:
        result = await asyncio.shield(handle.task)
    except asyncio.CancelledError:
        # $/cancelRequest: stop the run, then let the cancellation answer the request.
        await ctx.runs.cancel(handle.run_id)
        raise
    return {"runId": result.run_id, "stopReason": result.stop_reason}


async def cancel(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    p = parse_params(CancelParams, params)
    await context_for(ls, p).runs.cancel(p.runId)
    return {}


async def compact(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    """Compact the conversation now: older tool outputs pruned, older turns summarized."""
    ctx = context_for(ls, parse_params(WorkspaceParams, params))
    try:
        compacted = await ctx.runs.compact()
    except RunBusy as exc:
        raise RequestFailed(f"cannot compact now: {exc}") from exc
    if not compacted:
        ls.client.show("Nothing to compact yet: the conversation is short.")
    return state_json(ctx)


# -- approval ---------------------------------------------------------------------------------


async def approve(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    p = parse_params(ApproveParams, params)
    ctx = context_for(ls, p)
    session = ctx.session
    if ctx.runs.current is not None:
        raise RequestFailed("a run is in progress; wait for it or cancel it first")
    path = session.main_plan_path
    _check_the_plan_the_user_saw(ctx, p, path)
    text = ctx.runs.plan_text(path)
    if not text.strip():
        raise RequestFailed(f"cannot approve: {_rel(ctx, path)} is empty; there is no plan yet")
    if p.sha256 is not None and sha256_text(text) != p.sha256:
        raise RequestFailed(
            "cannot approve: the plan changed since you saw it; look at it again and approve"
        )
    issues = check_plan(text)
    if has_errors(issues) and not p.force:
        problems = "; ".join(i.message for i in issues if i.severity == "error")
        answer = await ls.client.ask(
            f"The plan has problems: {problems}. Approve anyway?",
            ["Approve anyway", "Cancel"],
            types.MessageType.Warning,
        )
        if answer != "Approve anyway":
            return state_json(ctx)
    problem = plan_file_problem(ctx.plans_dir, path, workspace=ctx.root)
    if problem is not None:
        raise RequestFailed(f"cannot approve: the plan cannot be saved: {problem}")
    try:
        approved = session.approve(path, text, p.permissionMode, Actor.USER)
    except TransitionRefused as exc:
        raise RequestFailed(f"cannot approve: {exc}") from exc
    if approved is None:
        if p.execute and not session.completed_do:
            # Approved earlier without a finished Do run (saved only, stopped, failed):
            # approving it again carries it out (in build mode, as approving does).
            session.set_mode(WorkMode.BUILD, Actor.USER)
            if p.permissionMode is not None:
                session.set_permission_mode(p.permissionMode, Actor.USER)
            _start_do_run(ctx, p.clearContext)
            return state_json(ctx)
        ls.client.show("This plan is already approved and unchanged; nothing to do.")
        return state_json(ctx)
    # What was approved is on disk too (the buffer saved by the client, or written), or,
    # in an editor that saves only when the user does, in the buffer the user saves.
    if not await ls.documents.save(path):
        with contextlib.suppress(HeldByEditor):
            ls.write_file(path, text)
    if p.execute:
        _start_do_run(ctx, p.clearContext)
    return state_json(ctx)


def _check_the_plan_the_user_saw(ctx: WorkspaceContext, p: ApproveParams, path: Path) -> None:
    """The approved plan must be the one the user looked at: a named document must be the
    submitted plan; an unnamed approval is refused while several plan files were written
    (the model could have shown one and submitted another)."""
    shown = _rel(ctx, path)
    if p.planUri is not None:
        fs = to_fs_path(p.planUri)
        try:
            named = Path(fs).resolve() if fs and "\x00" not in fs else None
        except (OSError, ValueError):
            named = None
        if named is None or named != path.resolve():
            raise RequestFailed(
                f"cannot approve {p.planUri}: the plan submitted for approval is {shown}; "
                "read that one and approve it"
            )
        return
    written = [w for w in ctx.session.round_plans if Path(w).resolve() != path.resolve()]
    if written:
        others = ", ".join(_rel(ctx, Path(w)) for w in written)
        raise RequestFailed(
            f"cannot approve without naming the plan: the model wrote several plan files "
            f"({others} besides the submitted {shown}); approve from the code lens on the "
            "plan you read, or name it (planUri)"
        )


def _rel(ctx: WorkspaceContext, path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ctx.root))
    except ValueError:
        return str(path)


def _start_do_run(ctx: WorkspaceContext, clear_context: bool) -> None:
    from plan_lsp.agent import prompts

    session = ctx.session
    assert session.approved is not None
    conversation = None
    if clear_context:
        conversation = f"do-{uuid.uuid4().hex[:8]}"
        session.switch_conversation(conversation, "approved with a fresh context")
    opening = prompts.do_request(session.task, session.approved.path, session.approved.text)
    shown = "Approved the plan" + (" (fresh context)" if clear_context else "")
    ctx.runs.start("do", opening, do_run=True, conversation=conversation, shown=shown)


HOW_TO_REVISE = (
    "To have the plan revised, write lines starting with `> feedback:` in it and choose "
    "Revise…, or send the feedback with the rejection; Approve still approves it as it is."
)
REJECT_WITHOUT_FEEDBACK = "Reject without feedback"


async def reject(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    """Reject the submitted plan. With feedback (given, or `> feedback:` lines in the plan)
    a planning run revises it; without, the plan is rejected and stays approvable and
    revisable. `confirm` (lenses, code actions): without feedback the user is asked first."""
    from plan_lsp.agent import prompts

    p = parse_params(RejectParams, params)
    ctx = context_for(ls, p)
    session = ctx.session
    if ctx.runs.current is not None:
        raise RequestFailed("a run is in progress; wait for it or cancel it first")
    feedback = (p.feedback or "").strip() or extract_feedback(
        ctx.runs.plan_text(session.main_plan_path)
    )
    if not feedback:
        if session.plan_status is PlanStatus.REJECTED:
            # Rejected already: nothing to reject again; say how to go on.
            ls.client.show(f"The plan is rejected. {HOW_TO_REVISE}")
            return state_json(ctx)
        if p.confirm and session.plan_status in (PlanStatus.SUBMITTED, PlanStatus.DRAFTING):
            answer = await ls.client.ask(
                f"Reject the plan without feedback? {HOW_TO_REVISE}",
                [REJECT_WITHOUT_FEEDBACK, "Cancel"],
                types.MessageType.Info,
            )
            if answer != REJECT_WITHOUT_FEEDBACK:
                return state_json(ctx)
            if ctx.runs.current is not None:  # a run started while the user was asked
                raise RequestFailed("a run is in progress; wait for it or cancel it first")
    try:
        session.reject(feedback, Actor.USER)
    except TransitionRefused as exc:
        raise RequestFailed(f"cannot reject: {exc}") from exc
    if feedback:
        opening = prompts.feedback_request(feedback, str(session.main_plan_path))
        ctx.runs.start("planning", opening, shown=f"Rejected the plan: {feedback}")
    return state_json(ctx)


# -- revisions, history, sessions, connection ----------------------------------------------------


def plan_revisions(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    ctx = context_for(ls, parse_params(WorkspaceParams, params))
    revs = ctx.store.revisions(ctx.session.id)
    previous = revs[-2] if len(revs) >= 2 else None
    current = revs[-1] if revs else None
    previous_uri = None
    if previous is not None:
        previous_uri = ls.write_revision(ctx, previous.rev, previous.text).as_uri()
    return {
        "previous": previous.text if previous else None,
        "current": current.text if current else None,
        "previousRevision": previous.rev if previous else None,
        "currentRevision": current.rev if current else None,
        "previousUri": previous_uri,
    }


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
    return {"updates": ctx.runs.history()}


def new_session(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    p = parse_params(NewSessionParams, params)
    ctx = context_for(ls, p)
    if ctx.runs.current is not None:
        raise RequestFailed("a run is in progress; wait for it or cancel it first")
    try:
        ctx.session.new_conversation(p.keepApprovedPlan, Actor.USER)
    except TransitionRefused as exc:
        raise _refused(exc) from exc
    return state_json(ctx)


async def test_connection(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    from plan_lsp.providers.base import ProviderError, error_help

    ctx = context_for(ls, parse_params(WorkspaceParams, params))
    info = ctx.provider_info()
    try:
        message = await asyncio.wait_for(ctx.provider().check(), CONNECTION_TEST_S)
    except ProviderError as exc:
        code, fix = error_help(exc)
        return {"ok": False, "code": code, "message": exc.message, "fix": fix}
    except TimeoutError:
        return {
            "ok": False,
            "code": "provider_unreachable",
            "message": f"the model server did not answer within {CONNECTION_TEST_S:g} s",
            "fix": {"setting": "baseUrl"},
        }
    if not info.configured:
        setting = "model" if "model" in (info.problem or "") else "apiKey"
        return {
            "ok": False,
            "code": "provider_unconfigured",
            "message": info.problem,
            "fix": {"setting": setting},
        }
    return {"ok": True, "code": None, "message": message, "fix": {}}
