"""The session's workflow, whatever the front-end: prompt, approve, reject (with or without
feedback), mode and permission switches, compaction, cancel, new conversations, revisions,
history and the connection test. Each operation takes the workspace's core and plain
arguments (a front-end has checked its request already) and returns the wire contract's
result (`plan_lsp/protocol/`); a refusal raises `Refused` with the reason the user reads."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from pathlib import Path

from plan_lsp.core import writing
from plan_lsp.core.checkpointing import open_steps
from plan_lsp.core.frontend import HeldByEditor, Refused
from plan_lsp.core.mode_switch import may_leave_planning
from plan_lsp.core.runs import RunBusy, RunHandle
from plan_lsp.core.workspace import WorkspaceCore
from plan_lsp.plan.readiness import check_plan, has_errors
from plan_lsp.plan.review import extract_feedback
from plan_lsp.policy.plan_paths import plan_file_problem
from plan_lsp.protocol.errors import CancelledCall
from plan_lsp.protocol.results import (
    ModeSwitchResult,
    PlanInfo,
    PlanRevisionsResult,
    PlansResult,
    PromptResult,
    TestConnectionResult,
)
from plan_lsp.protocol.state import DoMode, PermissionMode, PlanStatus, SessionState, WorkMode
from plan_lsp.session import Actor, TransitionRefused, sha256_text
from plan_lsp.session.plans import iso, latest_entry, plan_entries, plan_head, plan_title
from plan_lsp.session.store import PlanRevision

# How long a connection test waits for the model server.
CONNECTION_TEST_S = 20.0

HOW_TO_REVISE = (
    "To have the plan revised, write lines starting with `> feedback:` in it and choose "
    "Revise…, or send the feedback with the rejection; Approve still approves it as it is."
)
REJECT_WITHOUT_FEEDBACK = "Reject without feedback"
APPROVE_ANYWAY = "Approve anyway"


def _no_run(core: WorkspaceCore) -> None:
    if core.runs.current is not None:
        raise Refused("a run is in progress; wait for it or cancel it first")


# -- state and modes ----------------------------------------------------------------------------


async def set_mode(core: WorkspaceCore, mode: WorkMode) -> ModeSwitchResult:
    """A switch to build while a plan is being written asks first (`core/mode_switch.py`)."""
    if mode is WorkMode.BUILD and not await may_leave_planning(core):
        return ModeSwitchResult(**dict(core.state()), cancelled=[])
    try:
        core.session.set_mode(mode, Actor.USER)
    except TransitionRefused as exc:
        raise Refused(f"refused: {exc}") from exc
    return await _after_switch(core)


async def toggle_mode(core: WorkspaceCore) -> ModeSwitchResult:
    plan = core.session.mode is WorkMode.PLAN
    return await set_mode(core, WorkMode.BUILD if plan else WorkMode.PLAN)


async def _after_switch(core: WorkspaceCore) -> ModeSwitchResult:
    """In plan mode nothing changes: the answer waits until every running call that changes
    the workspace has been stopped, and says which were."""
    cancelled: list[CancelledCall] = []
    if core.session.mode is WorkMode.PLAN:
        cancelled = await core.runs.stop_side_effects("the user switched to plan mode while it ran")
    return ModeSwitchResult(**dict(core.state()), cancelled=cancelled)


def set_permission_mode(core: WorkspaceCore, mode: PermissionMode) -> SessionState:
    core.session.set_permission_mode(mode, Actor.USER)
    return core.state()


# -- runs ---------------------------------------------------------------------------------------


def start_prompt(core: WorkspaceCore, text: str) -> RunHandle:
    """Start the run for a prompt; its task's result is the agent's `RunResult`."""
    from plan_lsp.providers.base import ChatMessage

    if core.session.mode is WorkMode.PLAN:
        core.session.set_task(text)
    try:
        opening = ChatMessage(role="user", content=text)
        handle = writing.start(
            core, lambda: core.runs.start("prompt", opening, shown=text), do_run=False
        )
    except RunBusy as exc:
        raise Refused(str(exc)) from exc
    return handle


async def prompt(core: WorkspaceCore, text: str) -> PromptResult:
    return await answer(core, start_prompt(core, text))


async def answer(core: WorkspaceCore, handle: RunHandle) -> PromptResult:
    """The run's result once it ends; a cancelled request stops the run first."""
    assert handle.task is not None
    try:
        result = await asyncio.shield(handle.task)
    except asyncio.CancelledError:
        # The request was cancelled: stop the run, then let the cancellation answer it.
        await core.runs.cancel(handle.run_id)
        raise
    return PromptResult.model_validate({"runId": result.run_id, "stopReason": result.stop_reason})


async def compact(core: WorkspaceCore) -> SessionState:
    """Compact the conversation now: older tool outputs pruned, older turns summarized."""
    try:
        compacted = await core.runs.compact()
    except RunBusy as exc:
        raise Refused(f"cannot compact now: {exc}") from exc
    if not compacted:
        core.frontend.show("Nothing to compact yet: the conversation is short.")
    return core.state()


# -- approval ---------------------------------------------------------------------------------


async def approve(
    core: WorkspaceCore,
    *,
    plan_uri: str | None = None,
    sha256: str | None = None,
    permission_mode: PermissionMode | None = None,
    clear_context: bool = False,
    execute: bool = True,
    force: bool = False,
    do_mode: DoMode | None = None,
) -> SessionState:
    """Approve the submitted plan as the user saw it (`plan_uri`, the `sha256` of its text);
    `execute`: start the Do run (in a fresh conversation with `clear_context`); `force`:
    although readiness checks found errors (otherwise the user is asked)."""
    session = core.session
    _no_run(core)
    if execute:
        writing.check(core)
        core.after_do.approving()
    path = session.main_plan_path
    _check_the_plan_the_user_saw(core, plan_uri, path)
    earlier = session.plan_status is PlanStatus.NONE and latest_entry(
        plan_entries(core.store), path.resolve()
    )
    if earlier:
        raise Refused(
            f"cannot approve: {core.rel(path)} holds a plan of an earlier conversation "
            f"({earlier.status}), not one submitted now; ask for a plan in plan mode (it may "
            "build on this one) and approve it once it is submitted"
        )
    text = core.plan_text(path)
    if not text.strip():
        raise Refused(f"cannot approve: {core.rel(path)} is empty; there is no plan yet")
    if sha256 is not None and sha256_text(text) != sha256:
        raise Refused(
            "cannot approve: the plan changed since you saw it; look at it again and approve"
        )
    issues = check_plan(text)
    if has_errors(issues) and not force:
        problems = "; ".join(i.message for i in issues if i.severity == "error")
        answer = await core.frontend.ask(
            f"The plan has problems: {problems}. Approve anyway?",
            [APPROVE_ANYWAY, "Cancel"],
            warning=True,
        )
        if answer != APPROVE_ANYWAY:
            return core.state()
    problem = plan_file_problem(core.plans_dir, path, workspace=core.root)
    if problem is not None:
        raise Refused(f"cannot approve: the plan cannot be saved: {problem}")
    try:
        approved = session.approve(path, text, permission_mode, Actor.USER)
    except TransitionRefused as exc:
        raise Refused(f"cannot approve: {exc}") from exc
    core.stepping.choose(do_mode)
    if approved is None:
        if execute and not session.completed_do:
            # Approved earlier without a finished Do run (saved only, stopped, failed):
            # approving it again carries it out (in build mode, as approving does).
            session.set_mode(WorkMode.BUILD, Actor.USER)
            if permission_mode is not None:
                session.set_permission_mode(permission_mode, Actor.USER)
            start_do_run(core, clear_context)
            return core.state()
        core.frontend.show("This plan is already approved and unchanged; nothing to do.")
        return core.state()
    # What was approved is on disk too (the buffer saved by the client, or written), or,
    # in an editor that saves only when the user does, in the buffer the user saves.
    if not await core.frontend.save_buffer(path):
        with contextlib.suppress(HeldByEditor):
            core.frontend.write_file(path, text)
    if execute:
        start_do_run(core, clear_context)
    return core.state()


def _check_the_plan_the_user_saw(core: WorkspaceCore, plan_uri: str | None, path: Path) -> None:
    """The approved plan must be the one the user looked at: a named document must be the
    submitted plan; an unnamed approval is refused while several plan files were written
    (the model could have shown one and submitted another)."""
    shown = core.rel(path)
    if plan_uri is not None:
        named = _path_of_uri(plan_uri)
        if named is None or named != path.resolve():
            raise Refused(
                f"cannot approve {plan_uri}: the plan submitted for approval is {shown}; "
                "read that one and approve it"
            )
        return
    written = [w for w in core.session.round_plans if Path(w).resolve() != path.resolve()]
    if written:
        others = ", ".join(core.rel(Path(w)) for w in written)
        raise Refused(
            f"cannot approve without naming the plan: the model wrote several plan files "
            f"({others} besides the submitted {shown}); approve from the code lens on the "
            "plan you read, or name it (planUri)"
        )


def _path_of_uri(uri: str) -> Path | None:
    """The resolved path of a `file:` URI, None for anything else."""
    from urllib.parse import unquote, urlparse

    try:
        parsed = urlparse(uri)
    except ValueError:
        return None
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None
    raw = unquote(parsed.path)
    if not raw or "\x00" in raw:
        return None
    try:
        return Path(raw).resolve()
    except (OSError, ValueError, RuntimeError):
        return None


def start_do_run(core: WorkspaceCore, clear_context: bool) -> None:
    from plan_lsp.agent import prompts

    session = core.session
    assert session.approved is not None
    conversation = None
    if clear_context:
        conversation = f"do-{uuid.uuid4().hex[:8]}"
        session.switch_conversation(conversation, "approved with a fresh context")
    opening = core.stepping.opening(
        prompts.do_request(session.task, session.approved.path, session.approved.text)
    )
    shown = "Approved the plan" + (" (fresh context)" if clear_context else "")
    core.after_do.starting()
    writing.start(
        core,
        lambda: core.runs.start("do", opening, do_run=True, conversation=conversation, shown=shown),
        do_run=True,
    )


async def reject(
    core: WorkspaceCore, feedback: str | None = None, *, confirm: bool = False
) -> SessionState:
    """Reject the submitted plan. With feedback (given, or `> feedback:` lines in the plan)
    a planning run revises it; without, the plan is rejected and stays approvable and
    revisable. `confirm` (lenses, code actions): without feedback the user is asked first."""
    from plan_lsp.agent import prompts

    session = core.session
    _no_run(core)
    feedback = (feedback or "").strip() or extract_feedback(core.plan_text(session.main_plan_path))
    if not feedback:
        if session.plan_status is PlanStatus.REJECTED:
            # Rejected already: nothing to reject again; say how to go on.
            core.frontend.show(f"The plan is rejected. {HOW_TO_REVISE}")
            return core.state()
        if confirm and session.plan_status in (PlanStatus.SUBMITTED, PlanStatus.DRAFTING):
            answer = await core.frontend.ask(
                f"Reject the plan without feedback? {HOW_TO_REVISE}",
                [REJECT_WITHOUT_FEEDBACK, "Cancel"],
            )
            if answer != REJECT_WITHOUT_FEEDBACK:
                return core.state()
            _no_run(core)  # a run started while the user was asked
    try:
        session.reject(feedback, Actor.USER)
    except TransitionRefused as exc:
        raise Refused(f"cannot reject: {exc}") from exc
    if feedback:
        opening = prompts.feedback_request(feedback, str(session.main_plan_path))
        core.runs.start("planning", opening, shown=f"Rejected the plan: {feedback}")
    return core.state()


# -- revisions, history, sessions, connection ----------------------------------------------------


def plan_revisions(core: WorkspaceCore, plan_uri: str | None = None) -> PlanRevisionsResult:
    """The last two revisions of one plan file (`planUri`, default the session's current
    plan), never another plan's; the earlier one also as a read-only file (so an editor
    can show the two side by side)."""
    from plan_lsp.policy.server_dir import write_revision

    revs = plan_file_revisions(core, _plan_of(core, plan_uri))
    previous = revs[-2] if len(revs) >= 2 else None
    current = revs[-1] if revs else None
    previous_uri = None
    if previous is not None:
        previous_uri = write_revision(core.root, previous.rev, previous.text).as_uri()
    return PlanRevisionsResult(
        previous=previous.text if previous else None,
        current=current.text if current else None,
        previousRevision=previous.rev if previous else None,
        currentRevision=current.rev if current else None,
        previousUri=previous_uri,
    )


def _plan_of(core: WorkspaceCore, uri: str | None) -> Path:
    if uri is None:
        return core.session.main_plan_path.resolve()
    path = _path_of_uri(uri)
    if path is None:
        raise Refused(f"not a plan file: {uri[:200]}")
    return path


def plan_file_revisions(core: WorkspaceCore, path: Path) -> list[PlanRevision]:
    """The submitted revisions of the plan file `path`, oldest first: the session's own,
    or, for a plan of an earlier session, that session's."""
    own = [r for r in core.store.revisions(core.session.id) if Path(r.path).resolve() == path]
    if own or path == core.session.main_plan_path.resolve():
        return own  # the session's own plan: no need to replay the workspace's history
    entry = latest_entry(plan_entries(core.store), path)
    if entry is None or entry.session_id == core.session.id:
        return own
    return [r for r in core.store.revisions(entry.session_id) if Path(r.path).resolve() == path]


def _plan_title(core: WorkspaceCore, path: Path) -> str:
    """The open buffer's first heading, else the file's (read only inside the plans
    directory, never through a link, never more than its first lines)."""
    text = core.frontend.buffer_text(path)
    if text is None:
        text = plan_head(core.plans_dir, core.root, path)
    return plan_title(text, path.name)


def plans(core: WorkspaceCore) -> PlansResult:
    """Every plan of the workspace (this session's and earlier sessions'), oldest first,
    with where it ended; the session's current plan says so (`current`)."""
    session = core.session
    current = session.main_plan_path.resolve()
    out = []
    for entry in plan_entries(core.store):
        path = Path(entry.path)
        is_current = entry.session_id == session.id and path.resolve() == current
        status: str = entry.status
        partly = entry.carried_out
        if is_current and session.plan_status is not PlanStatus.NONE:
            status = session.plan_status.value
            if status == "approved" and session.completed_do:
                partly = open_steps(core)
                status = "approved" if partly else "done"
        out.append(
            PlanInfo.model_validate(
                {
                    "uri": path.as_uri(),
                    "title": _plan_title(core, path),
                    "status": status,
                    "sessionId": entry.session_id,
                    "revisions": entry.revisions,
                    "approvedAt": None if entry.approved_at is None else iso(entry.approved_at),
                    "updatedAt": iso(entry.updated),
                    "current": is_current and session.plan_status is not PlanStatus.NONE,
                    "carriedOut": partly,
                }
            )
        )
    return PlansResult(plans=out)


def new_session(core: WorkspaceCore, keep_approved_plan: bool = False) -> SessionState:
    _no_run(core)
    try:
        core.session.new_conversation(keep_approved_plan, Actor.USER)
    except TransitionRefused as exc:
        raise Refused(f"refused: {exc}") from exc
    return core.state()


async def test_connection(core: WorkspaceCore) -> TestConnectionResult:
    from plan_lsp.providers.base import ProviderError, error_help

    info = core.provider_info()
    try:
        message = await asyncio.wait_for(core.provider().check(), CONNECTION_TEST_S)
    except ProviderError as exc:
        code, fix = error_help(exc)
        answer = {"ok": False, "code": code, "message": exc.message, "fix": fix}
    except TimeoutError:
        timeout = f"the model server did not answer within {CONNECTION_TEST_S:g} s"
        answer = {"ok": False, "code": "provider_unreachable", "message": timeout}
        answer["fix"] = {"setting": "baseUrl"}
    else:
        answer = {"ok": True, "code": None, "message": message, "fix": {}}
        if not info.configured:
            setting = "model" if "model" in (info.problem or "") else "apiKey"
            answer = {"ok": False, "code": "provider_unconfigured", "message": info.problem or ""}
            answer["fix"] = {"setting": setting}
    return TestConnectionResult.model_validate(answer)
