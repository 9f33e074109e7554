"""What the user sees on a plan document: code lenses and code actions for approval, and
diagnostics from the readiness checks — positions in the client's encoding."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import to_fs_path

from plan_lsp.core.checkpointing import open_steps
from plan_lsp.core.workflow import plan_file_revisions
from plan_lsp.plan.checklist import plan_steps, without_checklist_marks
from plan_lsp.plan.readiness import check_plan
from plan_lsp.plan.text import LineIndex
from plan_lsp.protocol.state import PlanStatus
from plan_lsp.server import plan_review
from plan_lsp.server.step_lenses import RUN_REST, step_lenses
from plan_lsp.session.plans import day, latest_entry, plan_entries

if TYPE_CHECKING:
    from collections.abc import Callable

    from plan_lsp.core.workspace import WorkspaceCore
    from plan_lsp.core.workspaces import Workspaces
    from plan_lsp.server.client import ClientChannel
    from plan_lsp.server.documents import DocumentStore

    PublishDiagnostics = Callable[[types.PublishDiagnosticsParams], None]

log = logging.getLogger(__name__)

SOURCE = "plan-lsp"
APPROVE = "planLsp.approvePlan"
REJECT = "planLsp.rejectPlan"
SHOW_REVISION = "planLsp.showPreviousRevision"
_TOP = types.Range(start=types.Position(0, 0), end=types.Position(0, 0))


def _cmd(title: str, command: str, args: dict[str, Any] | None = None) -> types.Command:
    return types.Command(title=title, command=command, arguments=[args or {}])


def lens_commands(ctx: WorkspaceCore, path: Path) -> list[types.Command]:
    """Only on the submitted plan; an approval names the document it was offered on. Every
    status offers a way forward while no run is in progress: approve or reject a draft,
    approve or revise a rejected plan, carry out an approved plan not yet carried out."""
    session = ctx.session
    if path != session.main_plan_path.resolve() or _of_an_earlier_conversation(ctx, path):
        return earlier_plan_commands(ctx, path)
    plan = {"planUri": path.as_uri()}
    status = session.plan_status
    running = session.running
    approve = [
        _cmd("Approve (auto-accept edits)", APPROVE, {**plan, "permissionMode": "auto_edit"}),
        _cmd("Approve (ask before edits)", APPROVE, {**plan, "permissionMode": "ask"}),
        _cmd("Approve — step by step", APPROVE, {**plan, "doMode": "stepwise"}),
    ]
    compare = _compare(ctx, path)
    commands: list[types.Command] = []
    if status is PlanStatus.NONE and not running and ctx.plan_text(path).strip():
        # The model submitted none: the user wrote this plan, or the repository shipped it
        # (the server cannot tell). It is the user's to read and approve, and edits are
        # asked for one by one.
        commands.append(_cmd("Not written by the model: read it before you approve", ""))
        commands.append(approve[1])
    elif status is PlanStatus.DRAFTING and running:
        commands.append(_cmd("$(sync) Plan: drafting…", ""))
    elif status is PlanStatus.REJECTED and running:
        commands.append(_cmd("$(sync) Plan: revising…", ""))
    elif status is PlanStatus.SUBMITTED or (status is PlanStatus.DRAFTING and not running):
        changed = changed_since_approval(ctx, path)
        if changed:
            commands.append(_cmd(changed, ""))
        commands += approve
        commands.append(_cmd("Reject…", REJECT, {"confirm": True}))
        commands += compare
    elif status is PlanStatus.APPROVED and session.approved is not None:
        if running:
            commands.append(_cmd("Plan approved ✓ — running", ""))
        elif session.completed_do:
            # "done" only when every step of the plan is; else which are open, and why.
            partly = open_steps(ctx)
            commands.append(_cmd(f"Plan approved ✓ — {partly or 'done'}", ""))
            if partly and not ctx.stepping.active():
                commands.append(_cmd("Run the rest", RUN_REST))
        else:
            commands.append(_cmd("Plan approved ✓", ""))
            commands.append(_cmd("Run the approved plan", APPROVE, plan))
    elif status is PlanStatus.REJECTED:
        commands.append(_cmd("Plan rejected", ""))
        commands += approve
        commands.append(_cmd("Revise…", REJECT, {"confirm": True}))
        commands += compare
    return plan_review.lens_commands(ctx, path, commands)


def changed_since_approval(ctx: WorkspaceCore, path: Path) -> str | None:
    """The approved plan, edited by the user after approval, is unapproved text again (the
    status went back to drafting): which steps are new, changed or gone."""
    approved = ctx.session.approved
    if approved is None or Path(approved.path).resolve() != path:
        return None
    text = ctx.plan_text(path)
    if not ctx.differs_from_approved(text):
        return None
    before = [without_checklist_marks(s).strip() for s in plan_steps(approved.text)]
    now = [without_checklist_marks(s).strip() for s in plan_steps(text)]
    added = [str(i) for i, step in enumerate(now, 1) if step not in before]
    gone = len([step for step in before if step not in now])
    parts = []
    if added:
        parts.append(f"step{'s' if len(added) > 1 else ''} {', '.join(added)} not approved")
    if gone:
        parts.append(f"{gone} approved step{'s' if gone > 1 else ''} removed")
    what = "; ".join(parts) or "its text differs from the approved plan"
    return f"Changed since approval: {what} — approve again to run it"


def _of_an_earlier_conversation(ctx: WorkspaceCore, path: Path) -> bool:
    """A new session (status none) whose plan file is one the store knows: a plan the model
    wrote before, not the user's own plan — what became of it, never a decision."""
    if ctx.session.plan_status is not PlanStatus.NONE:
        return False
    return latest_entry(plan_entries(ctx.store), path) is not None


def _compare(ctx: WorkspaceCore, path: Path) -> list[types.Command]:
    """Compare with the previous revision of this plan file, when it has one."""
    if len(plan_file_revisions(ctx, path)) < 2:
        return []
    return [_cmd("Compare with previous revision", SHOW_REVISION, {"planUri": path.as_uri()})]


def earlier_plan_commands(ctx: WorkspaceCore, path: Path) -> list[types.Command]:
    """A plan file that is not the session's current plan: what became of it, never a
    decision (it is not the plan in front of the model)."""
    session = ctx.session
    if any(Path(p).resolve() == path for p in session.round_plans):
        # The model wrote it in this round, then chose another file for its plan.
        shown = session.main_plan_path.name
        return [_cmd(f"Also written this round — not the plan submitted ({shown})", "")]
    entry = latest_entry(plan_entries(ctx.store), path)
    if entry is None:
        return []
    if entry.approved_at is not None and entry.status in ("approved", "done"):
        done = " — done" if entry.status == "done" else ""
        done = f" — {entry.carried_out}" if entry.carried_out else done
        title = f"Approved plan ✓{done} (session of {day(entry.approved_at)})"
    else:
        title = f"Earlier plan — not approved (session of {day(entry.updated)})"
    return [_cmd(title, ""), *_compare(ctx, path)]


def action_commands(ctx: WorkspaceCore, path: Path) -> list[types.Command]:
    base = [c for c in lens_commands(ctx, path) if c.command]
    if not any(c.command == APPROVE and c.title.startswith("Approve") for c in base):
        return base
    plan = {"planUri": path.as_uri()}
    base.append(_cmd("Approve and save without executing", APPROVE, {**plan, "execute": False}))
    base.append(
        _cmd(
            "Approve with a fresh context",
            APPROVE,
            {**plan, "clearContext": True, "permissionMode": "auto_edit"},
        )
    )
    verb = "Revise" if ctx.session.plan_status is PlanStatus.REJECTED else "Reject"
    base.append(_cmd(f"{verb} with feedback from review notes (> feedback: …)", REJECT, {}))
    return base


# Diagnostics follow a document's changes at most this late.
DIAGNOSTICS_DELAY_S = 0.05


class PlanViews:
    """Lenses, actions and diagnostics of plan documents; refreshed on every state change."""

    def __init__(
        self,
        client: ClientChannel,
        documents: DocumentStore,
        workspaces: Workspaces,
        publish_diagnostics: PublishDiagnostics,
    ) -> None:
        self.client = client
        self.documents = documents
        self.workspaces = workspaces
        self.publish_diagnostics = publish_diagnostics
        self._due: dict[str, asyncio.TimerHandle] = {}

    def plan_context(self, uri: str) -> tuple[WorkspaceCore, Path] | None:
        fs = to_fs_path(uri)
        if not fs or "\x00" in fs:
            return None
        try:
            path = Path(fs).resolve()
        except (OSError, RuntimeError):
            return None
        ctx = self.workspaces.find_for_path(path)
        if ctx is None:
            return None
        plans = ctx.plans_dir.resolve()
        if plans not in path.parents or path.suffix != ".md":
            return None
        return ctx, path

    def code_lenses(self, params: types.CodeLensParams) -> list[types.CodeLens]:
        found = self.plan_context(params.text_document.uri)
        if found is None:
            return []
        top = [types.CodeLens(range=_TOP, command=c) for c in lens_commands(*found)]
        return top + step_lenses(*found)

    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        found = self.plan_context(params.text_document.uri)
        if found is None:
            return []
        # `source` where clients list it; none for coc.nvim, whose code-action menus
        # (`<Plug>(coc-codeaction)`, `-cursor`, `-line`) leave `source` actions out.
        kind = self.client.support.code_action_kind
        # A step's lenses on its line are code actions there too: clients that show no
        # lenses by default (coc.nvim) reach them from the code-action menu.
        first, last = params.range.start.line, params.range.end.line
        steps = [
            lens.command for lens in step_lenses(*found)
            if lens.command and lens.command.command and first <= lens.range.start.line <= last
        ]  # fmt: skip
        return [
            types.CodeAction(title=c.title, kind=kind, command=c)
            for c in [*action_commands(*found), *steps]
        ] + plan_review.code_actions(kind, *found, params)

    def diagnostics(self, ctx: WorkspaceCore, path: Path, text: str) -> list[types.Diagnostic]:
        encoding = self.documents.encoding
        index = LineIndex(text)
        out: list[types.Diagnostic] = []
        for issue in check_plan(text):
            line_start = index.starts[min(issue.line, index.line_count - 1)]
            start = index.position(min(line_start + issue.start_char, len(text)), encoding)
            end = index.position(min(line_start + issue.end_char, len(text)), encoding)
            out.append(
                types.Diagnostic(
                    range=types.Range(
                        start=types.Position(start.line, start.character),
                        end=types.Position(end.line, end.character),
                    ),
                    message=issue.message,
                    severity=types.DiagnosticSeverity.Warning,
                    source=SOURCE,
                    code=issue.code,
                )
            )
        out += plan_review.diagnostics(encoding, self.publish, ctx, path, text)
        session = ctx.session
        if (
            session.plan_status is PlanStatus.DRAFTING
            and session.approved is not None
            and Path(session.approved.path).resolve() == path
            and not session.running
        ):
            out.append(
                types.Diagnostic(
                    range=_TOP,
                    message="This plan changed after it was approved; approve it again to use it.",
                    severity=types.DiagnosticSeverity.Information,
                    source=SOURCE,
                    code="changed-after-approval",
                )
            )
        return out

    def publish_soon(self, uri: str) -> None:
        """After a change: the diagnostics of a document's latest text, computed once per
        `DIAGNOSTICS_DELAY_S` however many changes arrive (a streaming plan brings ~60 a
        second, and checking a 20 KB plan takes ~3 ms of the event loop)."""
        if uri not in self._due:
            loop = asyncio.get_running_loop()
            self._due[uri] = loop.call_later(DIAGNOSTICS_DELAY_S, self.publish, uri)

    def publish(self, uri: str) -> None:
        due = self._due.pop(uri, None)
        if due is not None:
            due.cancel()
        found = self.plan_context(uri)
        doc = self.documents.by_uri(uri)
        if found is None or doc is None:
            return
        ctx, path = found
        self.publish_diagnostics(
            types.PublishDiagnosticsParams(
                uri=uri, diagnostics=self.diagnostics(ctx, path, doc.text), version=doc.version
            )
        )

    def refresh(self) -> None:
        """State changed: lenses and diagnostics on open plan documents follow."""
        for doc in self.documents.all():
            if self.plan_context(doc.uri) is not None:
                self.publish(doc.uri)
        self.client.refresh_code_lenses()
