"""Reviewing a plan like code, what the plan document shows: comments on plan lines (kept
here, or typed as `> comment:` lines), re-anchored after a revision; the grounded check of
what the plan names (in a worker thread, after every change); the second reader's findings.
All are diagnostics of source `plan review` on the plan's lines, with their lens and code
actions (docs/plans.md, review). The requests and commands are `review_commands.py`."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import shutil
import stat
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from plan_lsp.core import second_reader
from plan_lsp.plan import comments as cm
from plan_lsp.plan.grounding import Lookups, ground_plan
from plan_lsp.plan.readiness import PlanIssue
from plan_lsp.plan.text import Encoding, LineIndex
from plan_lsp.protocol.state import PlanStatus
from plan_lsp.session import Actor

if TYPE_CHECKING:
    from plan_lsp.core.workspace import WorkspaceCore

SOURCE = "plan review"
COMMENT = "planLsp.commentOnPlan"
SEND = "planLsp.sendComments"
REVIEW = "planLsp.reviewPlan"
REJECT = "planLsp.rejectPlan"
APPROVE = "planLsp.approvePlan"
# A symbol not found is looked for again after this long (files change).
MISS_AGAIN_S = 20.0

log = logging.getLogger(__name__)


@dataclass
class Book:
    """What the server keeps about one plan document."""

    comments: list[cm.Comment] = field(default_factory=list)
    seen: str = ""  # the text the comments' lines refer to
    sent_base: str | None = None  # the text sent for revision, until the revision is in
    asked: str | None = None  # the text approval was asked about with open comments
    findings: list[PlanIssue] = field(default_factory=list)  # the reviewer's
    findings_text: str = ""
    grounded: list[PlanIssue] = field(default_factory=list)
    grounded_text: str | None = None
    grounding: asyncio.Future[None] | None = None
    reviewing: asyncio.Future[tuple[int, str]] | None = None  # before approval


books: dict[Path, Book] = {}
_symbols: dict[Path, tuple[set[str], dict[str, float]]] = {}  # root: found, missed at


def book(path: Path, text: str) -> Book:
    if path not in books:
        books[path] = Book(seen=text)
    return books[path]


def sync_comments(ctx: WorkspaceCore, path: Path, text: str) -> list[cm.Comment]:
    """The plan's comments against `text`, kept ones first, then typed ones not yet kept."""
    b = book(path, text)
    if b.sent_base is not None:
        session = ctx.session
        if not session.running and session.plan_status is not PlanStatus.REJECTED:
            cm.follow(b.comments, b.sent_base, text, settle=True)
            b.sent_base = None
            done = sum(c.status == "addressed" for c in b.comments if c.sent)
            session.record(
                "plan_comments", Actor.SYSTEM, {"path": str(path), "addressed": done,
                                                "comments": [c.text for c in b.comments]},
            )  # fmt: skip
    elif text != b.seen:
        cm.follow(b.comments, b.seen, text, settle=False)
    if b.sent_base is None:
        b.seen = text
    kept = {c.text for c in b.comments}
    return b.comments + [c for c in cm.typed_comments(text) if c.text not in kept]


def _range(index: LineIndex, encoding: Encoding, line: int, start: int, end: int) -> types.Range:
    line = min(line, index.line_count - 1)
    base, stop = index.starts[line], index.ends[line]
    a = index.position(min(base + start, stop), encoding)
    b = index.position(min(base + end, stop), encoding)
    return types.Range(types.Position(a.line, a.character), types.Position(b.line, b.character))


def lines_range(index: LineIndex, encoding: Encoding, start: int, end: int) -> types.Range:
    last = min(end, index.line_count - 1)
    stop = index.position(index.ends[last], encoding)
    return types.Range(
        types.Position(min(start, last), 0), types.Position(stop.line, stop.character)
    )


def diagnostics(
    enc: Encoding, publish: Callable[[str], None], ctx: WorkspaceCore, path: Path, text: str
) -> list[types.Diagnostic]:
    """Comments (Information), grounded checks and the reviewer's findings (Warning);
    `publish` publishes the document's diagnostics again once its grounded check is done."""
    index = LineIndex(text)
    out = []
    for c in sync_comments(ctx, path, text):
        what = "Comment (addressed)" if c.status == "addressed" else "Comment"
        out.append(
            types.Diagnostic(
                range=lines_range(index, enc, c.start, c.end),
                message=f"{what}: {c.text}",
                severity=types.DiagnosticSeverity.Information,
                source=SOURCE,
                code=f"comment-{c.status}",
            )
        )
    b = books[path]
    issues = _grounded(publish, ctx, path, text)
    if b.findings_text == text:
        issues = issues + b.findings
    for issue in issues:
        out.append(
            types.Diagnostic(
                range=_range(index, enc, issue.line, issue.start_char, issue.end_char),
                message=issue.message,
                severity=types.DiagnosticSeverity.Warning,
                source=SOURCE,
                code=issue.code,
            )
        )
    return out


# -- the lens and code actions ----------------------------------------------------------------


def lens_commands(
    ctx: WorkspaceCore, path: Path, shown: list[types.Command]
) -> list[types.Command]:
    """`shown`, the plan's lenses, and beside a plan that can be revised how many comments
    there are and what became of them; with `review_before_approval` the approval lenses
    wait for the second reader, started here."""
    if not any(c.command == REJECT for c in shown):
        return shown
    text = ctx.plan_text(path)
    comments = sync_comments(ctx, path, text)
    plan = {"planUri": path.as_uri()}
    out = []
    sent = [c for c in comments if c.sent]
    if sent and books[path].sent_base is None:
        done = sum(c.status == "addressed" for c in sent)
        out.append(_note(f"{done} of {len(sent)} comments addressed"))
    open_ = [c for c in comments if c.status == "open"]
    if open_:
        title = f"{len(open_)} comment{'s' if len(open_) > 1 else ''} — send"
        out.append(types.Command(title=title, command=SEND, arguments=[plan]))
    if _review_first(ctx, path, text):
        waiting = [c for c in shown if c.command != APPROVE]
        shown = [_note("Reviewing the plan before approval…"), *waiting]
    return shown + out


def _note(title: str) -> types.Command:
    return types.Command(title=title, command="", arguments=[{}])


def _review_first(ctx: WorkspaceCore, path: Path, text: str) -> bool:
    """Whether approval waits for the second reader (`review_before_approval`)."""
    b = books[path]
    session = ctx.session
    if (
        not ctx.config.review_before_approval
        or b.findings_text == text
        or session.plan_status is not PlanStatus.SUBMITTED
    ):
        return False
    if b.reviewing is None and ctx.runs.current is None:
        b.reviewing = review = asyncio.ensure_future(run_review(ctx, path, text))

        def reviewed(_: object) -> None:
            b.reviewing = None
            if review.cancelled() or review.exception() is not None:
                b.findings, b.findings_text = [], text  # approval waits no longer
                ctx.frontend.plans_changed()

        review.add_done_callback(reviewed)
    return b.reviewing is not None


def code_actions(
    kind: str | None, ctx: WorkspaceCore, path: Path, params: types.CodeActionParams
) -> list[types.CodeAction]:
    if ctx.session.running or path != ctx.session.main_plan_path.resolve():
        return []
    uri = path.as_uri()
    selected = params.range
    where = {"start": {"line": selected.start.line, "character": selected.start.character},
             "end": {"line": selected.end.line, "character": selected.end.character}}  # fmt: skip
    actions = [
        types.CodeAction(
            title="Comment on these lines…",
            kind=kind,
            command=types.Command(
                title="Comment on these lines…",
                command=COMMENT,
                arguments=[{"planUri": uri, "range": where}],
            ),
        ),
        types.CodeAction(
            title="Review the plan (a second reader)",
            kind=kind,
            command=types.Command(
                title="Review the plan", command=REVIEW, arguments=[{"planUri": uri}]
            ),
        ),
    ]
    for d in params.context.diagnostics:
        if d.source == SOURCE and d.severity == types.DiagnosticSeverity.Warning:
            feedback = f"About line {d.range.start.line + 1} of the plan: {d.message}"
            actions.append(
                types.CodeAction(
                    title="Ask for a revision about this",
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[d],
                    command=types.Command(
                        title="Ask for a revision about this",
                        command=REJECT,
                        arguments=[{"feedback": feedback}],
                    ),
                )
            )
    return actions


# -- the grounded check --------------------------------------------------------------------


def _grounded(
    publish: Callable[[str], None], ctx: WorkspaceCore, path: Path, text: str
) -> list[PlanIssue]:
    """The grounded check's issues for `text`; checked in a worker thread, then published
    again (until then the previous text's issues that still fit)."""
    b = books[path]
    if b.grounded_text != text and b.grounding is None:
        b.grounding = asyncio.ensure_future(_ground(publish, ctx, path))
    return [i for i in b.grounded if i.line < text.count("\n") + 1]


async def _ground(publish: Callable[[str], None], ctx: WorkspaceCore, path: Path) -> None:
    b = books[path]
    try:
        while (text := ctx.plan_text(path)) != b.grounded_text:
            try:
                found = await asyncio.to_thread(ground_plan, text, lookups(ctx.root, _shell(ctx)))
            except Exception:  # a check that fails says nothing about the plan
                log.exception("the grounded check of %s failed", path)
                found = []
            b.grounded, b.grounded_text = found, text
    finally:
        b.grounding = None
    publish(path.as_uri())


def _shell(ctx: WorkspaceCore) -> str:
    return ctx.state().planShell or "classified"


def lookups(root: Path, shell: str) -> Lookups:
    def exists(rel: str) -> bool:
        target = root / rel
        return os.path.lexists(target) and target.resolve().is_relative_to(root)

    def command_problem(command: str) -> str | None:
        if shell == "off":
            return "the plan-mode shell is off"
        from plan_lsp.policy.shell import classify_command

        decided = classify_command(command, protection=shell, roots=[root])  # type: ignore[arg-type]
        return None if decided.allowed else "; ".join(decided.reasons) or "refused"

    return Lookups(exists, lambda wanted: find_symbols(root, wanted), command_problem)


def find_symbols(root: Path, wanted: set[str]) -> set[str]:
    """Which of `wanted` occur as words in the workspace's files (not in .git or .plan-lsp):
    ripgrep, or without it one RE2 pass in the server; each name looked for again only after
    `MISS_AGAIN_S` (files change). Reading follows no link, as the grep tool reads."""
    found, missed = _symbols.setdefault(root, (set(), {}))
    now = time.monotonic()
    todo = {w for w in wanted - found if now - missed.get(w, -MISS_AGAIN_S) >= MISS_AGAIN_S}
    if not todo:
        return wanted & found
    rg = shutil.which("rg")
    if rg is not None:
        command = [rg, "-owF", "--no-filename", "--no-line-number", "--no-messages", "--hidden"]
        command += ["-g", "!.git", "-g", "!.plan-lsp", "-f", "-", str(root)]
        words = "\n".join(sorted(todo)).encode()
        try:
            done = subprocess.run(command, input=words, capture_output=True, timeout=60)
        except (OSError, subprocess.SubprocessError):
            return wanted  # unknown: not reported missing, looked for again next time
        hit = set(done.stdout.decode("utf-8", "replace").split()) & todo
    else:
        hit = _walk_for_words(root, todo)
    found |= hit
    for w in todo - hit:
        missed[w] = now
    return wanted & found


def _walk_for_words(root: Path, todo: set[str]) -> set[str]:
    from plan_lsp.tools.fs_common import GREP_MAX_FILE_BYTES
    from plan_lsp.tools.grep_engine import _compile

    regex = _compile(r"\b(?:" + "|".join(sorted(map(re.escape, todo))) + r")\b", False)
    hit: set[str] = set()
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in (".git", ".plan-lsp")]
        for name in files:
            try:
                fd = os.open(
                    os.path.join(directory, name), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
                )
                with os.fdopen(fd, "rb") as handle:
                    regular = stat.S_ISREG(os.fstat(fd).st_mode)
                    data = handle.read(GREP_MAX_FILE_BYTES) if regular else b""
            except OSError:
                continue
            if b"\0" not in data[:8192]:
                hit.update(m.group(0).decode() for m in regex.finditer(data))
    return hit


# -- the second reader -------------------------------------------------------------------------


async def run_review(ctx: WorkspaceCore, path: Path, text: str) -> tuple[int, str]:
    """The second reader reads `text` (`core/second_reader.py`); its findings become
    Warnings on the plan's lines. Returns how many, and why its run stopped."""
    findings, stop_reason = await second_reader.review(ctx, path, text)
    b = book(path, text)
    b.findings, b.findings_text = findings, text
    ctx.frontend.plans_changed()
    return len(findings), stop_reason
