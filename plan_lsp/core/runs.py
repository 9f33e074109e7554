"""Runs of the agent for one workspace: start, stream, cancel, stop side effects, and what
the front-end is told while they happen (updates, pushed state, history)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast

from pydantic import ValidationError

from plan_lsp.core import checkpointing
from plan_lsp.core.asking import HeardUser
from plan_lsp.core.checklist import ChecklistMirror
from plan_lsp.core.recorder import Recorder
from plan_lsp.plan.checklist import is_deviation
from plan_lsp.policy.sandbox_probe import sandbox_ready
from plan_lsp.protocol import updates as u
from plan_lsp.protocol.errors import CancelledCall, StopReason
from plan_lsp.protocol.state import PlanStatus
from plan_lsp.session import Actor

if TYPE_CHECKING:
    from plan_lsp.agent.loop import Agent, RunResult
    from plan_lsp.core.parts import WorkspaceParts
    from plan_lsp.providers.base import ChatMessage

log = logging.getLogger(__name__)

# How long streamed text is gathered into one update (about one frame).
TEXT_BATCH_S = 0.016
# How many conversation updates a session keeps for re-rendering.
HISTORY_KEEP = 2000


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

    def __init__(self, core: WorkspaceParts) -> None:
        self.core = core
        self.frontend = core.frontend
        self.current: RunHandle | None = None
        self.checklist = ChecklistMirror(core)
        self.checkpoints = Recorder(core, self.emit)
        self._agent: Agent | None = None
        self._background: set[asyncio.Future[Any]] = set()
        self._text_parts: list[str] = []
        self._text_run: str | None = None
        self._text_timer: asyncio.TimerHandle | None = None
        core.session.add_listener(self._on_session_change)

    @property
    def agent(self) -> Agent:
        if self._agent is None:
            # The agent (and the providers, tools and policies behind it) load on first use.
            from plan_lsp.agent.loop import Agent, AgentPorts

            ports = self.frontend.agent_ports(self.notify)
            self._agent = Agent(
                self.core.session,
                self.core.provider(),
                self.core.config,
                AgentPorts(
                    editor=ports.editor,
                    user=HeardUser(ports.user, self.notify),
                    drafts=ports.drafts,
                    notify=self.notify,
                ),
                self.core.plan_shell,
                mcp=self.core.mcp,
            )
            self._agent.runner.watch = self.checkpoints
        return self._agent

    # -- what the front-end is told -------------------------------------------------------------

    def notify(self, payload: Mapping[str, object]) -> None:
        """An update from below the core (the agent, its ports): checked against the contract
        at this boundary; one that does not hold is logged and dropped."""
        try:
            update = u.parse_update({"runId": self._run_id, "workspaceUri": self._uri, **payload})
        except ValidationError:
            log.exception("an update outside the contract was dropped: %r", payload)
            return
        self.emit(update)

    def emit(self, update: u.Update) -> None:
        if isinstance(update, u.TextUpdate):
            # Text deltas are batched (like plan edits) so a fast model does not flood the
            # client with one notification per token; order with other kinds is kept.
            if self._text_run not in (None, update.runId):
                self._flush_text()
            self._text_run = update.runId
            self._text_parts.append(update.delta)
            if self._text_timer is None:
                loop = asyncio.get_running_loop()
                self._text_timer = loop.call_later(TEXT_BATCH_S, self._flush_text)
            return
        self._flush_text()
        self._send(update)

    def _flush_text(self) -> None:
        if self._text_timer is not None:
            self._text_timer.cancel()
            self._text_timer = None
        if self._text_parts:
            delta = "".join(self._text_parts)
            self._send(
                u.TextUpdate(kind="text", runId=self._text_run, delta=delta, workspaceUri=self._uri)
            )
        self._text_parts = []
        self._text_run = None

    @property
    def _uri(self) -> str:
        return self.core.root.as_uri()

    def _send(self, update: u.Update) -> None:
        self._remember(update)
        self.frontend.update(update)

    def _remember(self, update: u.Update) -> None:
        """Keep what the user was shown, so a front-end can render the conversation again
        after a reload (`planLsp/history`). Draft progress is not conversation."""
        if isinstance(update, u.PlanDraftUpdate) and update.status == "drafting" and update.chars:
            return
        session = self.core.session
        try:
            session.store.append_history(
                session.id, session.conversation, update.model_dump(mode="json"), HISTORY_KEEP
            )
            if isinstance(update, u.ErrorUpdate) and update.failedPrompt and update.runId:
                session.store.update_history(
                    session.id, update.runId, "prompt", {"status": "failed"}
                )
        except Exception:
            log.exception("could not record history")

    def history(self) -> list[u.Update]:
        """The conversation's updates as the user was shown them (any stored entry that no
        longer holds to the contract is left out)."""
        self._flush_text()
        session = self.core.session
        found: list[u.Update] = []
        for payload in session.store.history(session.id, session.conversation, HISTORY_KEEP):
            with contextlib.suppress(ValidationError):
                found.append(u.parse_update(payload))
        return found

    def push_state(self) -> None:
        """The whole `SessionState`, to the front-end (never polled)."""
        state = self.core.state()
        self.frontend.update(
            u.StateUpdate(kind="state", runId=state.runId, state=state, workspaceUri=self._uri)
        )

    def _on_session_change(self, session: object, kind: str, data: Mapping[str, object]) -> None:
        core = self.core
        if kind in ("mode_changed", "plan_approved", "permission_mode_changed"):
            self.emit(
                u.ModeChangedUpdate(
                    kind="modeChanged",
                    runId=self._run_id,
                    mode=core.session.mode,
                    permissionMode=core.session.permission_mode,
                    planStatus=core.session.plan_status,
                    cause=cast(u.ModeCause, kind),
                    workspaceUri=self._uri,
                )
            )
        if kind == "mode_changed" and data.get("to") == "plan":
            # Whoever switched (the user, the model): nothing may change from now on.
            self._spawn(self.stop_side_effects("the session switched to plan mode"))
        if kind == "todos" and core.session.plan_status is PlanStatus.APPROVED:
            self.checklist.changed()
            self.checkpoints.todos_changed(core.session.todos)
        self.push_state()
        if kind not in ("context", "usage"):
            self.frontend.plans_changed()

    @property
    def _run_id(self) -> str | None:
        return self.current.run_id if self.current else None

    def _spawn(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def stop_side_effects(self, because: str) -> list[CancelledCall]:
        """Stop every running tool call that changes the workspace (process-group kill for
        shell commands) and wait until each has ended; tell the front-end which."""
        if self._agent is None:
            return []
        stopped = [
            CancelledCall(tool=c.tool, callId=c.tool_call_id or str(c.number), runId=c.run_id)
            for c in await self._agent.runner.stop_side_effects(because)
        ]
        if stopped:
            self.emit(
                u.CancelledCallsUpdate(
                    kind="cancelledCalls",
                    runId=self._run_id,
                    calls=stopped,
                    reason=because,
                    workspaceUri=self._uri,
                )
            )
        return stopped

    # -- running --------------------------------------------------------------------------------

    def start(
        self,
        kind: Literal["prompt", "do", "planning"],
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
        self.core.session.set_running(True, handle.run_id)
        if shown is not None:
            self.emit(
                u.PromptUpdate(
                    kind="prompt",
                    runId=handle.run_id,
                    origin=kind,
                    text=shown,
                    workspaceUri=self._uri,
                )
            )
        handle.task = asyncio.ensure_future(self._run(handle, opening, do_run, conversation))
        return handle

    async def compact(self) -> bool:
        """Compact the conversation now (the user asked). Holds the run slot meanwhile, so no
        run starts on a conversation being compacted; a cancel stops it. Returns whether
        anything was compacted."""
        if self.current is not None:
            raise RunBusy(
                f"a run ({self.current.run_id}) is in progress; the conversation is compacted "
                "automatically before its next request when it needs room"
            )
        handle = RunHandle(run_id=uuid.uuid4().hex[:10], kind="compact", cancel=asyncio.Event())
        self.current = handle
        self.core.session.set_running(True, handle.run_id)
        try:
            return await self.agent.compact_now(handle.run_id, handle.cancel) is not None
        finally:
            self.current = None
            self.core.session.set_running(False)

    async def _run(
        self,
        handle: RunHandle,
        opening: ChatMessage | None,
        do_run: bool,
        conversation: str | None,
    ) -> RunResult:
        from plan_lsp.agent.loop import RunResult

        core = self.core
        session = core.session
        session.record("run_started", Actor.SYSTEM, {"runId": handle.run_id, "kind": handle.kind})
        self.frontend.run_began(handle.run_id, handle.kind)
        loop = asyncio.get_running_loop()
        timer = loop.call_later(core.config.run_timeout_s, self._time_out, handle)
        try:
            # The tools offered and every shell command depend on the sandbox's status.
            await sandbox_ready()
            if do_run:
                await self.checkpoints.begin(handle.run_id)
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
                # disk: nothing the user is told from here on runs ahead of it.
                await self.checklist.settle()
            finally:
                self.current = None
                self.checkpoints.end("failed")
                session.set_running(False)
        if handle.timed_out and result.stop_reason == "cancelled":
            result.stop_reason = "timeout"
        self.checkpoints.stop_reason = result.stop_reason
        if result.stop_reason == "plan_submitted":
            self.checkpoints.prime()
        deviations: list[str] = []
        if do_run:
            plan = session.approved.text if session.approved else ""
            deviations = sorted(
                {core.rel(p) for p in result.touched if is_deviation(core.rel(p), plan)}
            )
            if result.stop_reason == "end_turn":
                # The workspace's core holds this manager as its runs (its parts do not say so).
                done_core = cast(checkpointing.Core, core)
                session.do_completed(handle.run_id, checkpointing.open_steps(done_core))
        session.record(
            "run_finished",
            Actor.SYSTEM,
            {"runId": handle.run_id, "stopReason": result.stop_reason, "deviations": deviations},
        )
        for dev in deviations:
            message = f"{dev} was changed but the approved plan never mentions it"
            self.emit(
                u.DeviationUpdate(
                    kind="deviation",
                    runId=handle.run_id,
                    path=dev,
                    message=message,
                    workspaceUri=self._uri,
                )
            )
        touched = [core.rel(p) for p in result.touched]
        self.emit(
            u.DoneUpdate(
                kind="done",
                stopReason=cast(StopReason, result.stop_reason),
                touched=touched,
                deviations=deviations,
                runId=handle.run_id,
                workspaceUri=self._uri,
            )
        )
        self.frontend.run_ended(handle.run_id, result.stop_reason)
        self.frontend.plans_changed()
        return result

    def _time_out(self, handle: RunHandle) -> None:
        if not handle.cancel.is_set():
            handle.timed_out = True
            limit = self.core.config.run_timeout_s
            message = f"the run was stopped after {limit:g} s (run_timeout_s)"
            self.emit(
                u.ErrorUpdate(
                    kind="error", runId=handle.run_id, message=message, workspaceUri=self._uri
                )
            )
            handle.cancel.set()

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

    async def close(self) -> None:
        await self.cancel(None)
        for task in list(self._background):
            task.cancel()
        self.checklist.close()
