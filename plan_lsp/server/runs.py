"""Runs of the agent for one workspace: start, stream, cancel, stop side effects, and what
the client is told while they happen (pushed state, updates, history, progress)."""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plan_lsp.plan.checklist import is_deviation, mirror_todos, without_checklist_marks
from plan_lsp.policy.safe_fs import disk_text
from plan_lsp.policy.sandbox_probe import sandbox_ready
from plan_lsp.server.client import HeldByEditor
from plan_lsp.server.documents import BufferEdit
from plan_lsp.server.plan_drafts import LspPlanDrafts
from plan_lsp.server.run_log import describe_update
from plan_lsp.session import Actor, PlanStatus

if TYPE_CHECKING:
    from plan_lsp.agent.loop import Agent, RunResult
    from plan_lsp.providers.base import ChatMessage
    from plan_lsp.server.app import PlanLanguageServer
    from plan_lsp.server.workspaces import WorkspaceContext

log = logging.getLogger(__name__)

# How long streamed text is gathered into one planLsp/update (about one frame).
TEXT_BATCH_S = 0.016
# How many conversation updates a session keeps for re-rendering.
HISTORY_KEEP = 2000
# How long the end of a run waits for the last checklist edit to be confirmed by the client
# and saved; after that the disk gets the checklist from the server and the run ends.
CHECKLIST_SETTLE_S = 10.0


@dataclass
class RunHandle:
    run_id: str
    kind: str
    cancel: asyncio.Event
    task: asyncio.Task[RunResult] | None = None
    timed_out: bool = False
    progress: str = ""
    started: float = field(default_factory=lambda: asyncio.get_running_loop().time())


class RunBusy(Exception):
    pass


class RunManager:
    """One per workspace; at most one run at a time."""

    def __init__(self, ls: PlanLanguageServer, ctx: WorkspaceContext) -> None:
        self.ls = ls
        self.ctx = ctx
        self.current: RunHandle | None = None
        self.drafts = LspPlanDrafts(ls, self.notify)
        self._agent: Agent | None = None
        self._background: set[asyncio.Future[Any]] = set()
        self._text_parts: list[str] = []
        self._text_run: str | None = None
        self._text_timer: asyncio.TimerHandle | None = None
        # The todo list mirrored into the approved plan: one worker at a time, always
        # towards the latest list; what its last edit came to.
        self._checklist_task: asyncio.Task[None] | None = None
        self._checklist_stale = False
        self._checklist_outcome: BufferEdit | None = None
        ctx.session.add_listener(self._on_session_change)

    @property
    def agent(self) -> Agent:
        if self._agent is None:
            # The agent (and the providers, tools and policies behind it) load on first use.
            from plan_lsp.agent.loop import Agent, AgentPorts
            from plan_lsp.server.editor_port import LspEditorPort
            from plan_lsp.server.user_port import LspUserPort

            self._agent = Agent(
                self.ctx.session,
                self.ctx.provider(),
                self.ctx.config,
                AgentPorts(
                    editor=LspEditorPort(self.ls.documents),
                    user=LspUserPort(self.ls.client, self.notify),
                    drafts=self.drafts,
                    notify=self.notify,
                ),
                self.ctx.plan_shell,
                mcp=self.ctx.mcp,
            )
        return self._agent

    # -- what the client is told ------------------------------------------------------------

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
        self._send(payload)

    def _flush_text(self) -> None:
        if self._text_timer is not None:
            self._text_timer.cancel()
            self._text_timer = None
        if self._text_parts:
            self._send(
                {
                    "runId": self._text_run,
                    "kind": "text",
                    "delta": "".join(self._text_parts),
                    "workspaceUri": self.ctx.root.as_uri(),
                }
            )
        self._text_parts = []
        self._text_run = None

    def _send(self, payload: dict[str, Any]) -> None:
        self._remember(payload)
        client = self.ls.client
        if client.support.plan_lsp:
            client.update(payload)
            return
        # A client that does not render planLsp/update gets the standard equivalents.
        line = describe_update(payload)
        if line is not None:
            client.log(line)
            if self.current is not None and self.current.progress:
                client.progress_report(self.current.progress, line)

    def _remember(self, payload: dict[str, Any]) -> None:
        """Keep what the client was shown, so it can render the conversation again after a
        reload (`planLsp/history`). Draft progress is not conversation."""
        kind = payload.get("kind")
        if kind == "planDraft" and payload.get("status") == "drafting" and payload.get("chars"):
            return
        session = self.ctx.session
        try:
            session.store.append_history(session.id, session.conversation, payload, HISTORY_KEEP)
            if kind == "error" and payload.get("failedPrompt") and payload.get("runId"):
                session.store.update_history(
                    session.id, str(payload["runId"]), "prompt", {"status": "failed"}
                )
        except Exception:
            log.exception("could not record history")

    def history(self) -> list[dict[str, Any]]:
        self._flush_text()
        session = self.ctx.session
        return session.store.history(session.id, session.conversation, HISTORY_KEEP)

    def push_state(self) -> None:
        """The whole `SessionState`, to every client that renders it (never polled)."""
        self.ls.client.update(
            {
                "kind": "state",
                "workspaceUri": self.ctx.root.as_uri(),
                "runId": self.ctx.session.run_id,
                "state": self.ctx.session.state().model_dump(mode="json"),
            }
        )

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
        if kind == "mode_changed" and data.get("to") == "plan":
            # Whoever switched (the user, the model): nothing may change from now on.
            self._spawn(self.stop_side_effects("the session switched to plan mode"))
        if kind == "todos" and self.ctx.session.plan_status is PlanStatus.APPROVED:
            self._checklist_changed()
        self.push_state()
        if kind not in ("context", "usage"):
            self.ls.plan_views.refresh(self.ctx)

    def _spawn(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def stop_side_effects(self, because: str) -> list[dict[str, Any]]:
        """Stop every running tool call that changes the workspace (process-group kill for
        shell commands) and wait until each has ended; tell the client which."""
        if self._agent is None:
            return []
        stopped = [c.to_json() for c in await self._agent.runner.stop_side_effects(because)]
        if stopped:
            self.notify({"kind": "cancelledCalls", "calls": stopped, "reason": because})
        return stopped

    # -- running --------------------------------------------------------------------------------

    def start(
        self,
        kind: str,
        opening: ChatMessage | None,
        *,
        do_run: bool = False,
        conversation: str | None = None,
        shown: str | None = None,
    ) -> RunHandle:
        """Start a run; `shown` is what the user asked, in their words, for the history."""
        if self.current is not None:
            raise RunBusy(f"a run ({self.current.run_id}) is in progress; wait for it or cancel it")
        handle = RunHandle(run_id=uuid.uuid4().hex[:10], kind=kind, cancel=asyncio.Event())
        self.current = handle
        self.ctx.session.set_running(True, handle.run_id)
        if shown is not None:
            self.notify({"runId": handle.run_id, "kind": "prompt", "origin": kind, "text": shown})
        handle.task = asyncio.ensure_future(self._run(handle, opening, do_run, conversation))
        return handle

    async def compact(self) -> bool:
        """Compact the conversation now (the user asked). Holds the run slot meanwhile, so no
        run starts on a conversation being compacted; `planLsp/cancel` stops it. Returns
        whether anything was compacted."""
        if self.current is not None:
            raise RunBusy(
                f"a run ({self.current.run_id}) is in progress; the conversation is compacted "
                "automatically before its next request when it needs room"
            )
        handle = RunHandle(run_id=uuid.uuid4().hex[:10], kind="compact", cancel=asyncio.Event())
        self.current = handle
        self.ctx.session.set_running(True, handle.run_id)
        try:
            return await self.agent.compact_now(handle.run_id, handle.cancel) is not None
        finally:
            self.current = None
            self.ctx.session.set_running(False)

    async def _run(
        self,
        handle: RunHandle,
        opening: ChatMessage | None,
        do_run: bool,
        conversation: str | None,
    ) -> RunResult:
        from plan_lsp.agent.loop import RunResult

        session = self.ctx.session
        session.record("run_started", Actor.SYSTEM, {"runId": handle.run_id, "kind": handle.kind})
        handle.progress = f"plan-lsp-run-{handle.run_id}"
        self.ls.client.progress_begin(handle.progress, f"plan-lsp: {handle.kind} run")
        loop = asyncio.get_running_loop()
        timer = loop.call_later(self.ctx.config.run_timeout_s, self._time_out, handle)
        try:
            # The tools offered and every shell command depend on the sandbox's status.
            await sandbox_ready()
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
            try:
                # The run is over when its last checklist state is in the buffer and on
                # disk: nothing the client is told from here on runs ahead of it.
                await self.settle_checklist()
            finally:
                self.current = None
                session.set_running(False)
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
        self.ls.client.progress_end(handle.progress, result.stop_reason)
        self.ls.plan_views.refresh(self.ctx)
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

    # -- the plan while it is carried out ---------------------------------------------------

    def plan_text(self, path: Path) -> str:
        """The plan as the user sees it: the open buffer, else the file."""
        text = self.ls.documents.text(path)
        if text is not None:
            return text
        return disk_text(path) or ""  # never through a link, never blocked on, bounded

    def _checklist_changed(self) -> None:
        """The todo list changed: mirror it into the plan. One worker at a time, each pass
        computed from the buffer as the previous edit left it and from the latest list, so
        marks never arrive out of order and the last list is always the one that lands."""
        self._checklist_stale = True
        if self._checklist_task is None or self._checklist_task.done():
            self._checklist_task = asyncio.ensure_future(self._mirror_until_current())

    async def _mirror_until_current(self) -> None:
        while self._checklist_stale:
            self._checklist_stale = False
            try:
                self._checklist_outcome = await self._mirror_checklist()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.exception("could not mirror the todo list into the plan")
                self._checklist_outcome = BufferEdit(False, reason=str(exc))

    async def _mirror_checklist(self) -> BufferEdit | None:
        """Make the plan show the todo list; None when it already did."""
        session = self.ctx.session
        if session.approved is None:
            return None
        path = Path(session.approved.path)
        current = self.plan_text(path)
        mirrored = mirror_todos(current, [(t.content, t.status) for t in session.todos])
        if mirrored == current:
            return None
        if self.ls.documents.get(path) is not None:
            return await self.ls.documents.edit_and_save(path, mirrored, "plan-lsp: checklist")
        self.ls.write_file(path, mirrored)
        return BufferEdit(True, on_disk=True)

    async def settle_checklist(self) -> None:
        """Wait until the todo list's last state is in the plan's buffer (the client
        confirmed the edit) and on disk, at most CHECKLIST_SETTLE_S: a client that never
        answers delays the end of a run by that much, not forever. Whatever did not reach
        the buffer by then, the disk gets from the server (logged)."""
        task = self._checklist_task
        if task is None:
            return
        reason = ""
        try:
            if not task.done():
                await asyncio.wait_for(asyncio.shield(task), CHECKLIST_SETTLE_S)
            # Settled: the next run's end has nothing of this one's to wait for.
            self._checklist_task = None
            outcome, self._checklist_outcome = self._checklist_outcome, None
            if outcome is None or (outcome.applied and outcome.on_disk):
                return
            if outcome.applied and outcome.reason:
                # In the buffer, with the user's unsaved changes: they save it with them.
                return
            reason = outcome.reason or "the buffer could not be saved"
        except TimeoutError:
            reason = f"the editor did not confirm it within {CHECKLIST_SETTLE_S:g} s"
        except asyncio.CancelledError:
            return  # the run itself is being stopped
        self._checklist_to_disk(reason)

    def _checklist_to_disk(self, reason: str) -> None:
        """The todo list's marks in the plan file, written by the server."""
        session = self.ctx.session
        if session.approved is None or session.plan_status is not PlanStatus.APPROVED:
            return
        path = Path(session.approved.path)
        disk = disk_text(path)
        if disk is None:
            return
        mirrored = mirror_todos(disk, [(t.content, t.status) for t in session.todos])
        if mirrored == disk:
            return
        try:
            self.ls.write_file(path, mirrored)
        except HeldByEditor:
            log.info("the checklist is in the buffer of %s; the user's save writes it", path)
            return
        except OSError as exc:
            log.warning(
                "the checklist reached neither the buffer nor %s: %s (%s)", path, exc, reason
            )
            return
        log.warning("the checklist reached %s on disk only: %s", path, reason)

    def differs_from_approved(self, text: str) -> bool:
        """`text` is not the approved plan. Checklist progress (the server's own mirroring
        of todos, or the user ticking a box) is not a change of the plan."""
        approved = self.ctx.session.approved
        return approved is not None and without_checklist_marks(text) != without_checklist_marks(
            approved.text
        )

    def approved_text_changed(self, text: str) -> None:
        """The user changed the plan after approval."""
        if self.differs_from_approved(text):
            self.ctx.session.approved_text_changed(text)

    async def close(self) -> None:
        await self.cancel(None)
        for task in list(self._background):
            task.cancel()
        if self._checklist_task is not None:
            self._checklist_task.cancel()
