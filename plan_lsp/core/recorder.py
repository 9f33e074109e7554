"""The recorder of the Do run's checkpoints (docs/checkpoints.md): a checkpoint before each
plan step and around each side-effect tool call, a denied change undone at once. The API
both front-ends use (list, revert, redo) is `checkpointing.py`."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

from plan_lsp.core.frontend import Refused
from plan_lsp.core.parts import WorkspaceParts
from plan_lsp.plan.checklist import plan_steps, todo_steps
from plan_lsp.protocol import results as r
from plan_lsp.protocol import updates as u
from plan_lsp.protocol.state import Todo
from plan_lsp.session.checkpoints import AFTER, BEFORE, CheckpointError, CheckpointStore
from plan_lsp.session.checkpoints import Checkpoint as StoreCheckpoint
from plan_lsp.session.checkpoints import RevertResult as StoreResult
from plan_lsp.session.state_home import workspace_state_dir

if TYPE_CHECKING:
    from plan_lsp.tools.base import ToolResult

log = logging.getLogger(__name__)

# The checkpoints of this many Do runs are kept (older ones are pruned when a run starts).
KEEP_RUNS = 10
StepStateName = Literal["not_reached", "running", "done", "reverted", "denied", "failed"]


class Recorder:
    """One per workspace: records the Do run's checkpoints in the session's store (under the
    user's state folder, never in the workspace), off the event loop, in order."""

    def __init__(self, core: WorkspaceParts, emit: Callable[[u.Update], None]) -> None:
        self.core = core
        self.emit = emit
        self._store: CheckpointStore | None = None
        self._session: str | None = None
        self._lock = asyncio.Lock()
        self.run_id: str | None = None  # the Do run in progress
        self.step: int | None = None
        self.stop_reason: str | None = None
        # Per step: (state, why) for steps not done by the todo list alone.
        self.marks: dict[int, tuple[StepStateName, str]] = {}
        self._denied: dict[int | None, set[str]] = {}
        self._before: dict[str, str] = {}  # tool call id -> the checkpoint before it
        # Per revert that can be redone: the todos before it, the paths it wrote.
        self._redo: list[tuple[list[Todo], set[str]]] = []
        self._warned = False
        self._priming: asyncio.Future[None] | None = None

    # -- the store ------------------------------------------------------------------------------

    def store(self) -> CheckpointStore:
        """The session's store; Refused (saying why) when it cannot be opened."""
        session = self.core.session
        if self._store is None or self._session != session.id:
            try:
                folder = workspace_state_dir(self.core.root) / "checkpoints" / session.id
                self._store = CheckpointStore(folder, self.core.root)
            except (CheckpointError, OSError) as exc:
                raise Refused(f"the checkpoint store cannot be used: {exc}") from exc
            self._session = session.id
        return self._store

    def _plan_rel(self) -> str | None:
        approved = self.core.session.approved
        return self.core.rel(approved.path) if approved else None

    async def _take(
        self,
        label: str,
        *,
        kind: str = BEFORE,
        call: str | None = None,
        touched: Sequence[str] = (),
    ) -> StoreCheckpoint | None:
        """A checkpoint in a worker thread; None (the run goes on, told once) when the store
        cannot be written."""
        async with self._lock:
            try:
                store = self.store()
                cp = await asyncio.to_thread(
                    store.checkpoint, label, self.step, call, kind=kind, run=self.run_id or "",
                    touched=touched,
                )  # fmt: skip
            except (Refused, CheckpointError, OSError) as exc:
                if not self._warned:
                    self._warned = True
                    self._say(f"checkpoints are off for this run: {exc}")
                return None
        if kind == BEFORE:
            self.emit(self._update("recorded", f"checkpoint {cp.id}: {label}", checkpoint=cp))
        return cp

    def _say(self, message: str) -> None:
        self.emit(
            u.ErrorUpdate(kind="error", runId=self.run_id, message=message, workspaceUri=self._uri)
        )

    @property
    def _uri(self) -> str:
        return self.core.root.as_uri()

    def _update(
        self, action: Literal["recorded", "reverted", "redone", "denied"], message: str,
        *, checkpoint: StoreCheckpoint | None = None, result: r.RevertResult | None = None,
    ) -> u.CheckpointUpdate:  # fmt: skip
        info = None if checkpoint is None else self.info(checkpoint)
        return u.CheckpointUpdate(
            kind="checkpoint", runId=self.run_id, workspaceUri=self._uri, action=action,
            checkpoint=info, result=result, message=message,
        )  # fmt: skip

    def info(self, cp: StoreCheckpoint) -> r.CheckpointInfo:
        steps = plan_steps(self.core.session.approved.text) if self.core.session.approved else []
        text = steps[cp.step - 1] if cp.step and cp.step <= len(steps) else None
        kind = {AFTER: "after", "revert": "revert", "redo": "redo"}.get(cp.kind)
        kind = kind or ("tool" if cp.tool_call_id else "step")
        files = [r.CheckpointFile(path=f.path, status=f.status, added=f.added, removed=f.removed)  # type: ignore[arg-type]
                 for f in cp.files]  # fmt: skip
        at = datetime.fromtimestamp(cp.at, UTC).isoformat(timespec="seconds")
        extra = {"toolCallId": cp.tool_call_id} if cp.tool_call_id else {}
        return r.CheckpointInfo(
            id=cp.id, step=cp.step, stepText=text, kind=kind, label=cp.label, at=at, files=files,  # type: ignore[arg-type]
            **extra,
        )  # fmt: skip

    # -- the Do run -----------------------------------------------------------------------------

    async def begin(self, run_id: str) -> None:
        self.run_id, self.step, self.stop_reason = run_id, None, None
        self._denied, self._before, self._warned = {}, {}, False
        try:
            store = self.store()
            await asyncio.to_thread(store.prune, KEEP_RUNS)
        except (Refused, CheckpointError, OSError) as exc:
            log.warning("checkpoints not pruned: %s", exc)

    def prime(self) -> None:
        """A plan awaits the user's decision: the store reads the workspace meanwhile, off
        the event loop, so that the Do run's first checkpoint looks only at what changed."""

        async def read_ahead() -> None:
            async with self._lock:
                try:
                    await asyncio.to_thread(self.store().prime)
                except (Refused, CheckpointError, OSError) as exc:
                    log.info("checkpoints not read ahead: %s", exc)

        self._priming = asyncio.ensure_future(read_ahead())
        self._priming.add_done_callback(lambda t: t.cancelled() or t.exception())

    def end(self, stop_reason: str) -> None:
        self.run_id, self.stop_reason = None, stop_reason

    def todos_changed(self, todos: list[Todo]) -> None:
        """The todo list changed during the Do run: a step newly in progress gets its
        checkpoint."""
        if self.run_id is None or self.core.session.approved is None:
            return
        pairs = [(t.content, t.status) for t in todos]
        numbers = todo_steps(self.core.session.approved.text, pairs)
        of = {numbers[i]: t.status for i, t in enumerate(todos) if i in numbers}
        running = [n for n, status in sorted(of.items()) if status == "in_progress"]
        if running and running[0] != self.step:
            self.step = running[0]
            self.marks.pop(self.step, None)
            task = asyncio.ensure_future(self._take(f"before step {self.step}"))
            task.add_done_callback(lambda t: t.cancelled() or t.exception())

    async def before(self, tool: str, call_id: str, paths: list[str]) -> None:
        if self.run_id is None:
            return
        cp = await self._take(f"before {tool}", call=call_id, touched=paths)
        if cp is not None:
            self._before[call_id] = cp.id

    def denied(self, tool: str, paths: list[str]) -> None:
        if self.run_id is not None:
            self._denied.setdefault(self.step, set()).update(
                self.core.rel(self.core.root / p) for p in paths
            )

    async def after(
        self, tool: str, call_id: str, paths: list[str], result: ToolResult
    ) -> ToolResult:
        if self.run_id is None:
            return result
        cp = await self._take(f"after {tool}", kind=AFTER, call=call_id, touched=paths)
        denied = self._denied.get(self.step, set())
        hit = sorted({f.path for f in cp.files} & denied) if cp is not None else []
        before = self._before.pop(call_id, None)
        if not hit or before is None:
            return result
        async with self._lock:
            try:
                done = await asyncio.to_thread(self.store().revert, before, set(hit))
            except (Refused, CheckpointError, OSError) as exc:
                done, why = None, str(exc)
        files = ", ".join(hit)
        message = f"{tool} changed {files}, which the user refused to let change in this step"
        if done is None:
            message += f"; it could not be undone ({why})"
        else:
            message += "; the change was undone"
        if self.step is not None:
            self.marks[self.step] = ("denied", message)
        self.emit(
            self._update("denied", message, result=None if done is None else to_wire(done, []))
        )
        note = (f"\n\nplan-lsp: {message}. Do not route around the user's refusal: stop and "
                "report to the user what you wanted to change and why.")  # fmt: skip
        return result.model_copy(update={"content": result.content + note, "is_error": True})


def to_wire(done: StoreResult, steps: list[int]) -> r.RevertResult:
    def why(items: list[object]) -> list[r.PathWhy]:
        return [r.PathWhy(path=k.path, why=k.why) for k in items]  # type: ignore[attr-defined]

    return r.RevertResult(
        checkpointId=done.target, restored=done.restored, merged=done.merged,
        kept=why(list(done.kept)), notRestorable=why(list(done.not_restorable)),
        stepsReverted=steps,
    )  # fmt: skip
