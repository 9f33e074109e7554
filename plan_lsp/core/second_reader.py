"""The plan's second reader: a subagent with a fresh conversation, on `review_model` or the
session's model, that reads the numbered plan and, with read-only tools only, the workspace,
and answers `L<n>: problem` lines. It never edits, never changes the mode or the approval:
it holds the read-only tools minus subagents, plan writes and mode switches
(`agent/subagent.py`), and the execution gate refuses any other call it makes. Both
front-ends run it: the LSP server's `planLsp.reviewPlan` (findings as diagnostics) and ACP's
`/review` (findings as a message)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plan_lsp.agent.subagent import review_findings, review_request, reviewer_tools
from plan_lsp.core.frontend import Refused
from plan_lsp.plan.readiness import PlanIssue

if TYPE_CHECKING:
    from plan_lsp.core.workspace import WorkspaceCore

FINDING = "review-finding"


async def review(ctx: WorkspaceCore, path: Path, text: str) -> tuple[list[PlanIssue], str]:
    """The reviewer's findings on `text` (Warnings on the lines it names), and why its run
    stopped. Holds the run slot meanwhile (a cancel stops it)."""
    from plan_lsp.core.runs import RunHandle

    runs = ctx.runs
    if runs.current is not None:
        raise Refused("a run is in progress; wait for it or cancel it first")
    handle = RunHandle(run_id=uuid.uuid4().hex[:10], kind="review", cancel=asyncio.Event())
    runs.current = handle
    ctx.session.set_running(True, handle.run_id)
    agent = runs.agent
    provider = _review_provider(ctx)
    saved = agent.stream.provider
    try:
        if provider is not None:
            agent.stream.provider = provider
        result = await agent.run(
            handle.run_id,
            review_request(ctx.rel(path), text),
            handle.cancel,
            conversation=f"review-{handle.run_id}",
            allow_names=reviewer_tools(agent.registry.definitions()),
            emit_done=False,
        )
    finally:
        agent.stream.provider = saved
        runs.current = None
        # The reviewer's answer reaches the user before what the front-end says of it.
        runs._flush_text()
        ctx.session.set_running(False)
    lines = max(len(text.splitlines()), 1)
    findings = [
        PlanIssue("warning", f"Reviewer: {message}", min(line, lines) - 1, 0, 10_000, FINDING)
        for line, message in review_findings(result.text)
    ]
    return findings, result.stop_reason


def _review_provider(ctx: WorkspaceCore) -> Any:
    """The reviewer's own model (`review_model`), on the session's provider and server."""
    cfg = ctx.config
    if not cfg.review_model or cfg.review_model == cfg.model or cfg.provider == "scripted":
        return None
    return ctx.build_provider(cfg.review_model)
