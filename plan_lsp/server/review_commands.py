"""Plan review's requests and commands: comment on plan lines, list the comments, send them
to start a revision, approve (asking first about open comments) and the second reader, a
read-only subagent with a fresh context. What the plan document shows is `plan_review.py`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from plan_lsp.core import Refused, workflow
from plan_lsp.plan import comments as cm
from plan_lsp.plan.review import extract_feedback
from plan_lsp.plan.text import LineIndex
from plan_lsp.protocol.params import ApproveParams
from plan_lsp.protocol.review import (
    CommentOnPlanParams,
    CommentsResult,
    PlanComment,
    PlanParams,
    ReviewResult,
)
from plan_lsp.server import methods
from plan_lsp.server.plan_review import (
    COMMENT,
    REVIEW,
    SEND,
    book,
    books,
    lines_range,
    run_review,
    sync_comments,
)
from plan_lsp.session import Actor, sha256_text

if TYPE_CHECKING:
    from plan_lsp.core.workspace import WorkspaceCore
    from plan_lsp.server.app import PlanLanguageServer

APPROVE_ANYWAY = "Approve anyway"


def _plan(ls: PlanLanguageServer, p: PlanParams) -> tuple[WorkspaceCore, Path, str]:
    ctx = methods.context_for(ls, p)
    path = ctx.session.main_plan_path.resolve()
    if p.planUri is not None:
        found = ls.plan_views.plan_context(p.planUri)
        if found is None or found[0] is not ctx:
            raise Refused(f"not a plan document of this workspace: {p.planUri[:200]}")
        path = found[1]
    return ctx, path, ctx.plan_text(path)


def _listed(ls: PlanLanguageServer, ctx: WorkspaceCore, path: Path, text: str) -> dict[str, Any]:
    enc = ls.documents.encoding
    index = LineIndex(text)
    listed = []
    for c in sync_comments(ctx, path, text):
        r = lines_range(index, enc, c.start, c.end)
        where = {"start": {"line": r.start.line, "character": r.start.character},
                 "end": {"line": r.end.line, "character": r.end.character}}  # fmt: skip
        listed.append(PlanComment.model_validate(
            {"id": c.id, "range": where, "quote": c.quote, "text": c.text,
             "status": c.status, "sent": c.sent}))  # fmt: skip
    return CommentsResult(comments=listed).model_dump(mode="json")


def comments(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    return _listed(ls, *_plan(ls, methods.parse_params(PlanParams, params)))


async def comment_on_plan(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    """Keep a comment on the lines of `range`; without a text, put a `> comment: ` line
    under them for the user to type it (clients without an input box)."""
    p = methods.parse_params(CommentOnPlanParams, params)
    ctx, path, text = _plan(ls, p)
    start, end = p.range.start.line, p.range.end.line
    if end > start and p.range.end.character == 0:
        end -= 1  # a selection of whole lines ends at the next line's start
    if not (p.text or "").strip():
        index = LineIndex(text)
        last = min(end, index.line_count - 1)
        at = index.position(index.ends[last], ls.documents.encoding)
        pos = types.Position(at.line, at.character)
        edit = types.TextEdit(types.Range(pos, pos), "\n> comment: ")
        await ls.client.apply_edit(types.WorkspaceEdit(changes={path.as_uri(): [edit]}), "Comment")
        return _listed(ls, ctx, path, text)
    sync_comments(ctx, path, text)
    books[path].comments.append(cm.new_comment(text, start, end, p.text or ""))
    ls.plan_views.refresh()
    return _listed(ls, ctx, path, text)


async def send_comments(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    """Send every open comment with its quoted lines: the revision starts."""
    p = methods.parse_params(PlanParams, params)
    ctx, path, text = _plan(ls, p)
    if path != ctx.session.main_plan_path.resolve():
        raise Refused("only the submitted plan can be revised")
    b = book(path, text)
    open_ = [c for c in sync_comments(ctx, path, text) if c.status == "open"]
    if not open_:
        raise Refused("there are no open comments to send")
    feedback = cm.feedback_text(open_)
    notes = extract_feedback(text)
    await workflow.reject(ctx, feedback + (f"\n\nAlso: {notes}" if notes else ""))
    b.comments += [c for c in open_ if c not in b.comments]
    for c in open_:
        c.sent = True
    b.sent_base = b.seen = text
    ctx.session.record("plan_comments_sent", Actor.USER, {"path": str(path), "count": len(open_)})
    return _listed(ls, ctx, path, text)


async def approve(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    """Approving with open comments asks once (per plan text) before it approves."""
    p = methods.parse_params(ApproveParams, params)
    ctx = methods.context_for(ls, p)
    path = ctx.session.main_plan_path.resolve()
    text = ctx.plan_text(path)
    open_ = [c for c in sync_comments(ctx, path, text) if c.status == "open"]
    b = books[path]
    if open_ and not p.force and b.asked != sha256_text(text) and not ctx.session.running:
        b.asked = sha256_text(text)
        n = len(open_)
        answer = await ctx.frontend.ask(
            f"{n} comment{'s' if n > 1 else ''} on this plan {'are' if n > 1 else 'is'} open "
            "(no revision changed the lines). Approve anyway?",
            [APPROVE_ANYWAY, "Cancel"],
            warning=True,
        )
        if answer != APPROVE_ANYWAY:
            return ctx.state().model_dump(mode="json")
    return await methods.approve(ls, params)


async def review_plan(ls: PlanLanguageServer, params: Any) -> dict[str, Any]:
    """*Review the plan*: the second reader (`plan_review.run_review`)."""
    ctx, path, text = _plan(ls, methods.parse_params(PlanParams, params))
    findings, stop_reason = await run_review(ctx, path, text)
    return ReviewResult(findings=findings, stopReason=stop_reason).model_dump()


REQUESTS = {"planLsp/comments": comments, "planLsp/approvePlan": approve}
COMMANDS = {
    COMMENT: comment_on_plan,
    SEND: send_comments,
    REVIEW: review_plan,
    "planLsp.approvePlan": approve,
}
