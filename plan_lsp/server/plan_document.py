"""What the user sees on a plan document: code lenses and code actions for approval,
diagnostics from the readiness checks, and keeping state in step with the buffer."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from plan_lsp.plan.readiness import check_plan
from plan_lsp.server.app import PlanLanguageServer
from plan_lsp.server.lazy import Implementations
from plan_lsp.server.params import parse_params
from plan_lsp.server.run_methods import runs_for, tracker_of
from plan_lsp.server.state_methods import WorkspaceParams, context_for
from plan_lsp.server.workspaces import WorkspaceContext
from plan_lsp.session import PlanStatus

log = logging.getLogger(__name__)

SOURCE = "plan-lsp"
APPROVE = "planLsp.approvePlan"
REJECT = "planLsp.rejectPlan"
SHOW_REVISION = "planLsp.showPreviousRevision"


def _plan_context(ls: PlanLanguageServer, uri: str) -> tuple[WorkspaceContext, Path] | None:
    fs = to_fs_path(uri)
    if not fs:
        return None
    path = Path(fs).resolve()
    ctx = ls.workspaces.find_for_path(path)
    if ctx is None:
        return None
    plans = ctx.plans_dir.resolve()
    if plans not in path.parents or path.suffix != ".md":
        return None
    return ctx, path


def _cmd(title: str, command: str, args: dict[str, Any] | None = None) -> types.Command:
    return types.Command(title=title, command=command, arguments=[args or {}])


def lens_commands(ctx: WorkspaceContext, path: Path) -> list[types.Command]:
    session = ctx.session
    if path != session.main_plan_path.resolve():
        return []
    status = session.plan_status
    running = session.running
    commands: list[types.Command] = []
    if status is PlanStatus.DRAFTING and running:
        commands.append(_cmd("$(sync) Plan: drafting…", ""))
    elif status is PlanStatus.SUBMITTED or (status is PlanStatus.DRAFTING and not running):
        commands.append(
            _cmd("Approve (auto-accept edits)", APPROVE, {"permissionMode": "auto_edit"})
        )
        commands.append(_cmd("Approve (ask before edits)", APPROVE, {"permissionMode": "ask"}))
        commands.append(_cmd("Reject…", REJECT, {}))
        if len(ctx.store.revisions(session.id)) >= 2:
            commands.append(_cmd("Compare with previous revision", SHOW_REVISION, {}))
    elif status is PlanStatus.APPROVED and session.approved is not None:
        label = "Plan approved ✓" + (" — running" if running else "")
        commands.append(_cmd(label, ""))
    elif status is PlanStatus.REJECTED:
        commands.append(_cmd("Plan rejected — waiting for a revised plan", ""))
    return commands


def action_commands(ctx: WorkspaceContext, path: Path) -> list[types.Command]:
    base = [c for c in lens_commands(ctx, path) if c.command]
    if not any(c.command == APPROVE for c in base):
        return base
    base.append(_cmd("Approve and save without executing", APPROVE, {"execute": False}))
    base.append(
        _cmd(
            "Approve with a fresh context",
            APPROVE,
            {"clearContext": True, "permissionMode": "auto_edit"},
        )
    )
    base.append(_cmd("Reject with feedback from review notes (> feedback: …)", REJECT, {}))
    return base


def diagnostics_for(ctx: WorkspaceContext, path: Path, text: str) -> list[types.Diagnostic]:
    out: list[types.Diagnostic] = []
    for issue in check_plan(text):
        out.append(
            types.Diagnostic(
                range=types.Range(
                    start=types.Position(line=issue.line, character=issue.start_char),
                    end=types.Position(line=issue.line, character=issue.end_char),
                ),
                message=issue.message,
                severity=types.DiagnosticSeverity.Warning,
                source=SOURCE,
                code=issue.code,
            )
        )
    session = ctx.session
    if (
        session.plan_status is PlanStatus.DRAFTING
        and session.approved is not None
        and Path(session.approved.path).resolve() == path
        and not session.running
    ):
        out.append(
            types.Diagnostic(
                range=types.Range(
                    start=types.Position(line=0, character=0),
                    end=types.Position(line=0, character=0),
                ),
                message="This plan changed after it was approved; approve it again to use it.",
                severity=types.DiagnosticSeverity.Information,
                source=SOURCE,
                code="changed-after-approval",
            )
        )
    return out


def register(ls: PlanLanguageServer, impl: Implementations) -> None:
    tracker = tracker_of(ls)

    def publish(uri: str) -> None:
        found = _plan_context(ls, uri)
        if found is None:
            return
        ctx, path = found
        text = tracker.text(path) or ""
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics_for(ctx, path, text))
        )

    def refresh_plan_views(ctx: WorkspaceContext) -> None:
        """State changed: lenses and diagnostics on open plan documents follow."""
        for uri in list(ls.workspace.text_documents):
            if _plan_context(ls, uri) is not None:
                publish(uri)
        try:
            if ls.client_capabilities.workspace and ls.client_capabilities.workspace.code_lens:
                ls.workspace_code_lens_refresh(None)
        except Exception:
            log.debug("code lens refresh failed", exc_info=True)

    ls.refresh_plan_views = refresh_plan_views  # type: ignore[attr-defined]

    @impl.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: PlanLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        tracker.changed(params.text_document.uri)
        publish(params.text_document.uri)

    @impl.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: PlanLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        tracker.changed(uri)
        found = _plan_context(ls, uri)
        if found is None:
            return
        ctx, path = found
        session = ctx.session
        if (
            session.plan_status is PlanStatus.APPROVED
            and session.approved is not None
            and Path(session.approved.path).resolve() == path
        ):
            runs_for(ls, ctx).approved_text_changed(tracker.text(path) or "")
        publish(uri)

    @impl.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: PlanLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        tracker.changed(params.text_document.uri)

    @impl.feature(types.TEXT_DOCUMENT_CODE_LENS)
    def code_lens(ls: PlanLanguageServer, params: types.CodeLensParams) -> list[types.CodeLens]:
        found = _plan_context(ls, params.text_document.uri)
        if found is None:
            return []
        ctx, path = found
        top = types.Range(
            start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)
        )
        return [types.CodeLens(range=top, command=c) for c in lens_commands(ctx, path)]

    @impl.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.Source, types.CodeActionKind.QuickFix]
        ),
    )
    def code_action(
        ls: PlanLanguageServer, params: types.CodeActionParams
    ) -> list[types.CodeAction]:
        found = _plan_context(ls, params.text_document.uri)
        if found is None:
            return []
        ctx, path = found
        return [
            types.CodeAction(title=c.title, kind=types.CodeActionKind.Source, command=c)
            for c in action_commands(ctx, path)
        ]

    @impl.feature("planLsp/planRevisions")
    def plan_revisions(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
        ctx = context_for(ls, parse_params(WorkspaceParams, params))
        revs = ctx.store.revisions(ctx.session.id)
        previous = revs[-2] if len(revs) >= 2 else None
        current = revs[-1] if revs else None
        return {
            "previous": previous.text if previous else None,
            "current": current.text if current else None,
            "previousRevision": previous.rev if previous else None,
            "currentRevision": current.rev if current else None,
            "previousUri": _revision_file(ctx, previous.rev, previous.text).as_uri()
            if previous
            else None,
        }

    @impl.command(SHOW_REVISION)
    async def show_previous_revision(ls: PlanLanguageServer, *args: Any) -> dict[str, Any]:
        result = plan_revisions(ls, args[0] if args else {})
        if result["previousUri"]:
            await ls.window_show_document_async(
                types.ShowDocumentParams(uri=result["previousUri"], take_focus=True)
            )
        return result


def _revision_file(ctx: WorkspaceContext, rev: int, text: str) -> Path:
    """Earlier revisions as read-only files under .plan-lsp/revisions (never in plans/)."""
    from plan_lsp.policy.server_dir import write_revision

    return write_revision(ctx.root, rev, text)
