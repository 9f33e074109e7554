"""`planLsp/retry`: the last run, which the model server failed (refused, 5xx, a broken
stream), started again with one action. A prompt the model never saw is sent once more (it
was taken out of the conversation); a run that had gone some steps goes on from its last
complete one. The user is shown the run's prompt again, as they first asked it."""

from __future__ import annotations

from plan_lsp.core import workflow, writing
from plan_lsp.core.frontend import Refused
from plan_lsp.core.runs import RunBusy
from plan_lsp.core.workspace import WorkspaceCore
from plan_lsp.protocol import updates as u
from plan_lsp.protocol.results import PromptResult

NOTHING = "nothing to retry: the last run did not fail on the model server"


async def retry(core: WorkspaceCore) -> PromptResult:
    failed = core.runs.agent.failed
    if failed is None:
        raise Refused(NOTHING)
    if failed.conversation != core.session.conversation:
        raise Refused("nothing to retry: a new conversation started after the run failed")
    shown = next(
        (
            h
            for h in reversed(core.runs.history())
            if isinstance(h, u.PromptUpdate) and h.runId == failed.run_id
        ),
        None,
    )
    origin = shown.origin if shown else ("do" if failed.do_run else "prompt")
    text = shown.text if shown else "Retry"
    try:
        # A retry may change the folder as the run did: it holds the writer slot the same way.
        handle = writing.start(
            core,
            lambda: core.runs.start(origin, failed.opening, do_run=failed.do_run, shown=text),
            do_run=failed.do_run,
        )
    except RunBusy as exc:
        raise Refused(str(exc)) from exc
    return await workflow.answer(core, handle)
