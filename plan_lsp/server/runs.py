"""Runs of the agent for one workspace: start, stream, cancel, and the approval flow that
turns an approved plan into a Do run."""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types

from plan_lsp.agent import prompts
from plan_lsp.agent.loop import Agent, AgentPorts, RunResult
from plan_lsp.plan.checklist import is_deviation, mirror_todos
from plan_lsp.policy.plan_paths import write_plan_file
from plan_lsp.providers.base import ChatMessage, Provider
from plan_lsp.server.app import PlanLanguageServer
from plan_lsp.server.documents import DocumentTracker, LspEditorPort
from plan_lsp.server.plan_stream import LspPlanDrafts
from plan_lsp.server.user_port import LspUserPort
from plan_lsp.server.workspaces import WorkspaceContext
from plan_lsp.session import Actor, PlanStatus

log = logging.getLogger(__name__)

# How long streamed text is gathered into one planLsp/update (about one frame).
TEXT_BATCH_S = 0.016


@dataclass
class RunHandle:
    run_id: str
    kind: str
    cancel: asyncio.Event
    task: asyncio.Task[RunResult] | None = None
    timed_out: bool = False
    started: float = field(default_factory=lambda: asyncio.get_running_loop().time())


class RunBusy(Exception):
    pass


class RunManager:
    """One per workspace; at most one run at a time."""

    def __init__(
        self,
        ls: PlanLanguageServer,
        ctx: WorkspaceContext,
        tracker: DocumentTracker,
        provider_factory: Callable[[], Provider],
        plan_shell: str,
    ) -> None:
        self.ls = ls
        self.ctx = ctx
        self.tracker = tracker
        self.current: RunHandle | None = None
        self.drafts = LspPlanDrafts(ls, tracker, self.notify)
        self._provider_factory = provider_factory
        self._agent: Agent | None = None
        self.plan_shell = plan_shell
        self._background: set[asyncio.Future[None]] = set()
        self._text_parts: list[str] = []
        self._text_run: str | None = None
        self._text_timer: asyncio.TimerHandle | None = None
        ctx.session.add_listener(self._on_session_change)

    @property
    def agent(self) -> Agent:
        if self._agent is None:
            self._agent = Agent(
                self.ctx.session,
                self._provider_factory(),
                self.ctx.config,
                AgentPorts(
                    editor=LspEditorPort(self.tracker),
                    user=LspUserPort(self.ls, self.notify),
                    drafts=self.drafts,
                    notify=self.notify,
                ),
                self.plan_shell,
            )
        return self._agent

    # -- notifications ------------------------------------------------------------------------

    def notify(self, payload: dict[str, Any]) -> None:
        payload.setdefault("runId", self.current.run_id if self.current else None)
        payload.setdefault("workspaceUri", self.ctx.root.as_uri())
        if payload.get("kind") == "text":
            # Text deltas are batched (like plan edits) so a fast model does not flood the
            # client with one notification per token; order with other kinds is kept.
            if self._text_run not in (None, payload["runId"]):
                self._flush_text()
            self._text_run = payload["runId"]
            self._text_parts.append(str(payload.get("delta", "")))
            if self._text_timer is None:
                loop = asyncio.get_running_loop()
                self._text_timer = loop.call_later(TEXT_BATCH_S, self._flush_text)
            return
        self._flush_text()
        self.ls.notify_update(payload)

    def _flush_text(self) -> None:
        if self._text_timer is not None:
            self._text_timer.cancel()
            self._text_timer = None
        if self._text_parts:
            self.ls.notify_update(
                {
                    "runId": self._text_run,
                    "kind": "text",
                    "delta": "".join(self._text_parts),
                    "workspaceUri": self.ctx.root.as_uri(),
                }
            )
        self._text_parts = []
        self._text_run = None

    def _on_session_change(self, session: Any, kind: str, data: dict[str, Any]) -> None:
        if kind in ("mode_changed", "plan_approved", "permission_mode_changed"):
            self.notify(
                {
                    "kind": "modeChanged",
                    "mode": self.ctx.session.mode.value,
                    "permissionMode": self.ctx.session.permission_mode.value,
                    "planStatus": self.ctx.session.plan_status.value,
                    "cause": kind,
                }
            )
        if kind == "todos" and self.ctx.session.plan_status is PlanStatus.APPROVED:
            task = asyncio.ensure_future(self._mirror_checklist())
            self._background.add(task)
            task.add_done_callback(self._background.discard)
        refresh = getattr(self.ls, "refresh_plan_views", None)
        if refresh is not None:
            refresh(self.ctx)

    # -- running --------------------------------------------------------------------------------

    def start(
        self,
        kind: str,
        opening: ChatMessage | None,
        *,
        do_run: bool = False,
        conversation: str | None = None,
    ) -> RunHandle:
        if self.current is not None:
            raise RunBusy(f"a run ({self.current.run_id}) is in progress; wait for it or cancel it")
        handle = RunHandle(run_id=uuid.uuid4().hex[:10], kind=kind, cancel=asyncio.Event())
        self.current = handle
        self.ctx.session.set_running(True)
        handle.task = asyncio.ensure_future(self._run(handle, opening, do_run, conversation))
        return handle

    async def _run(
        self,
        handle: RunHandle,
        opening: ChatMessage | None,
        do_run: bool,
        conversation: str | None,
    ) -> RunResult:
        session = self.ctx.session
        session.record("run_started", Actor.SYSTEM, {"runId": handle.run_id, "kind": handle.kind})
        progress = await self._progress_begin(handle)
        loop = asyncio.get_running_loop()
        timer = loop.call_later(self.ctx.config.run_timeout_s, self._time_out, handle)
        try:
            result = await self.agent.run(
                handle.run_id,
                opening,
                handle.cancel,
                conversation=conversation,
                do_run=do_run,
                emit_done=False,
            )
        except asyncio.CancelledError:
            result = RunResult(handle.run_id, "cancelled")
        finally:
            timer.cancel()
            self.current = None
            session.set_running(False)
            await self._progress_end(progress)
        if handle.timed_out and result.stop_reason == "cancelled":
            result.stop_reason = "timeout"
        deviations: list[str] = []
        if do_run:
            plan = session.approved.text if session.approved else ""
            deviations = sorted(
                {self._rel(p) for p in result.touched if is_deviation(self._rel(p), plan)}
            )
            if result.stop_reason == "end_turn":
                session.do_completed(handle.run_id)
        session.record(
            "run_finished",
            Actor.SYSTEM,
            {"runId": handle.run_id, "stopReason": result.stop_reason, "deviations": deviations},
        )
        for dev in deviations:
            self.notify(
                {
                    "runId": handle.run_id,
                    "kind": "deviation",
                    "path": dev,
                    "message": f"{dev} was changed but the approved plan never mentions it",
                }
            )
        self.notify(
            {
                "runId": handle.run_id,
                "kind": "done",
                "stopReason": result.stop_reason,
                "touched": [self._rel(p) for p in result.touched],
                "deviations": deviations,
            }
        )
        refresh = getattr(self.ls, "refresh_plan_views", None)
        if refresh is not None:
            refresh(self.ctx)
        return result

    def _time_out(self, handle: RunHandle) -> None:
        if not handle.cancel.is_set():
            handle.timed_out = True
            self.notify(
                {
                    "runId": handle.run_id,
                    "kind": "error",
                    "message": f"the run was stopped after {self.ctx.config.run_timeout_s:g} s "
                    "(run_timeout_s)",
                }
            )
            handle.cancel.set()

    def _rel(self, path: str) -> str:
        try:
            return str(Path(path).resolve().relative_to(self.ctx.root))
        except ValueError:
            return path

    async def cancel(self, run_id: str | None) -> bool:
        handle = self.current
        if handle is None or (run_id is not None and run_id != handle.run_id):
            return False
        handle.cancel.set()
        if handle.task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(handle.task), 10)
            except TimeoutError:
                handle.task.cancel()
        return True

    # -- progress ------------------------------------------------------------------------------

    async def _progress_begin(self, handle: RunHandle) -> str | None:
        try:
            window = self.ls.client_capabilities.window
            if not (window and window.work_done_progress):
                return None
            token = f"plan-lsp-run-{handle.run_id}"
            await asyncio.wait_for(self.ls.work_done_progress.create_async(token), 5)
            self.ls.work_done_progress.begin(
                token,
                types.WorkDoneProgressBegin(title=f"plan-lsp: {handle.kind} run", cancellable=True),
            )
            return token
        except Exception:
            log.debug("no work-done progress", exc_info=True)
            return None

    async def _progress_end(self, token: str | None) -> None:
        if token is None:
            return
        try:
            self.ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message="done"))
        except Exception:
            log.debug("progress end failed", exc_info=True)

    # -- approval -------------------------------------------------------------------------------

    def plan_text(self, path: Path) -> str:
        text = self.tracker.text(path)
        if text is not None:
            return text
        try:
            return path.read_text(encoding="utf-8")
        except OSError:
            return ""

    def start_do_run(self, clear_context: bool) -> RunHandle:
        session = self.ctx.session
        assert session.approved is not None
        conversation = None
        if clear_context:
            conversation = f"do-{uuid.uuid4().hex[:8]}"
            session.switch_conversation(conversation, "approved with a fresh context")
        opening = prompts.do_request(session.task, session.approved.path, session.approved.text)
        return self.start("do", opening, do_run=True, conversation=conversation)

    def start_feedback_run(self, feedback: str) -> RunHandle:
        session = self.ctx.session
        opening = prompts.feedback_request(feedback, str(session.main_plan_path))
        return self.start("planning", opening)

    async def _mirror_checklist(self) -> None:
        session = self.ctx.session
        if session.approved is None:
            return
        path = Path(session.approved.path)
        current = self.plan_text(path)
        mirrored = mirror_todos(current, [(t.content, t.status) for t in session.todos])
        if mirrored == current:
            return
        if self.tracker.document(path) is not None:
            await self.tracker.replace_text(path, mirrored)
        else:
            write_plan_file(self.ctx.plans_dir, path, mirrored, workspace=self.ctx.root)

    def approved_text_changed(self, text: str) -> None:
        """The user changed the plan after approval. Checklist progress (the server's own
        mirroring of todos, or the user ticking a box) is not a change of the plan."""
        approved = self.ctx.session.approved
        if approved is None or without_checklist_marks(text) == without_checklist_marks(
            approved.text
        ):
            return
        self.ctx.session.approved_text_changed(text)


_CHECK_MARK = re.compile(r"^(\s*(?:[-*+]|\d+[.)])\s+)\[[ xX~]\]\s?", re.MULTILINE)


def without_checklist_marks(text: str) -> str:
    return _CHECK_MARK.sub(r"\1", text)
