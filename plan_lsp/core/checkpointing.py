"""Checkpoints of the Do run (docs/checkpoints.md): the recorder the run drives (a checkpoint
before each plan step and around each side-effect call, a denied change undone at once), and
the core API both front-ends use: list, revert, redo, a step's changes, the steps' states."""

from __future__ import annotations

import asyncio
import difflib
import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal, Protocol

from plan_lsp.core.frontend import Refused
from plan_lsp.core.parts import WorkspaceParts
from plan_lsp.plan.checklist import plan_steps, todo_steps
from plan_lsp.protocol import results as r
from plan_lsp.protocol import updates as u
from plan_lsp.protocol.state import Todo
from plan_lsp.session import Actor
from plan_lsp.session.checkpoints import AFTER, BEFORE, CheckpointError, CheckpointStore
from plan_lsp.session.checkpoints import Checkpoint as StoreCheckpoint
from plan_lsp.session.checkpoints import RevertResult as StoreResult
from plan_lsp.session.checkpoints.model import CLOSING, PRE_REVERT
from plan_lsp.session.checkpoints.snapshot import FILE
from plan_lsp.session.state_home import workspace_state_dir

if TYPE_CHECKING:
    from plan_lsp.tools.base import ToolResult

log = logging.getLogger(__name__)

# The checkpoints of this many Do runs are kept (older ones are pruned when a run starts).
KEEP_RUNS = 10
_DIFF_MAX_BYTES = 1 << 20
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
        self._redo_todos: list[list[Todo]] = []
        self._finished: int | None = None
        self._warned = False

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
        self.run_id, self.step, self.stop_reason, self._finished = run_id, None, None, None
        self._denied, self._before, self._warned = {}, {}, False
        try:
            store = self.store()
            await asyncio.to_thread(store.prune, KEEP_RUNS)
        except (Refused, CheckpointError, OSError) as exc:
            log.warning("checkpoints not pruned: %s", exc)

    def end(self, stop_reason: str) -> None:
        self.run_id, self.stop_reason = None, stop_reason

    def todos_changed(self, todos: list[Todo]) -> tuple[int | None, int | None] | None:
        """The todo list changed during the Do run: a step newly in progress gets its
        checkpoint. Returns (step finished, step starting) when a step boundary was crossed."""
        if self.run_id is None or self.core.session.approved is None:
            return None
        pairs = [(t.content, t.status) for t in todos]
        numbers = todo_steps(self.core.session.approved.text, pairs)
        of = {numbers[i]: t.status for i, t in enumerate(todos) if i in numbers}
        finished = None
        if self.step is not None and of.get(self.step) == "completed":
            finished = None if self.step == self._finished else self.step
            self._finished = self.step
        running = [n for n, status in sorted(of.items()) if status == "in_progress"]
        starting = running[0] if running and running[0] != self.step else None
        if starting is not None:
            self.step = starting
            self.marks.pop(starting, None)
            task = asyncio.ensure_future(self._take(f"before step {starting}"))
            task.add_done_callback(lambda t: t.cancelled() or t.exception())
        return (finished, starting) if finished or starting else None

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


class _Runs(Protocol):
    @property
    def checkpoints(self) -> Recorder: ...


class Core(WorkspaceParts, Protocol):
    """A workspace's core as this API uses it: its parts and its runs' recorder (typed here
    so the parts need not name the run manager, which records through this module)."""

    @property
    def runs(self) -> _Runs: ...


def _recorder(core: Core) -> Recorder:
    return core.runs.checkpoints


# -- the API both front-ends use -----------------------------------------------------------------


def list_checkpoints(core: Core) -> r.CheckpointsResult:
    rec = _recorder(core)
    store = rec.store()
    shown = [rec.info(cp) for cp in store.list() if cp.kind != PRE_REVERT]
    return r.CheckpointsResult(checkpoints=shown, canRedo=bool(store.redo_stack))


def _refuse_while_running(core: WorkspaceParts, what: str) -> None:
    current = core.session.run_id if core.session.running else None
    if core.session.running:
        raise Refused(
            f"a run ({current}) is in progress: stop it first (planLsp/cancel), then {what}"
        )


async def revert(core: Core, checkpoint_id: str) -> r.RevertResult:
    """Bring the workspace back to `checkpoint_id` (what this session's run changed since);
    the steps from there on are pending again, and the model is told."""
    _refuse_while_running(core, "revert")
    rec = _recorder(core)
    store = rec.store()
    try:
        at = store.position(checkpoint_id)
    except CheckpointError as exc:
        raise Refused(str(exc)) from exc
    steps = sorted({cp.step for cp in store.list()[at:] if cp.step})
    async with rec._lock:
        try:
            done = await asyncio.to_thread(store.revert, checkpoint_id, None, rec._plan_rel())
        except CheckpointError as exc:
            raise Refused(f"the revert did not happen: {exc}") from exc
    session = core.session
    rec._redo_todos.append(list(session.todos))
    if session.approved is not None and steps:
        numbers = todo_steps(session.approved.text, [(t.content, t.status) for t in session.todos])
        todos = [
            t.model_copy(update={"status": "pending"}) if numbers.get(i) in steps else t
            for i, t in enumerate(session.todos)
        ]
        session.set_todos(todos, Actor.USER)
    for step in steps:
        rec.marks[step] = ("reverted", f"reverted to checkpoint {checkpoint_id}")
    result = to_wire(done, steps)
    _tell(core, rec, "reverted", result, f"reverted the workspace to checkpoint {checkpoint_id}")
    return result


async def redo(core: Core) -> r.RevertResult:
    """Undo the last revert."""
    _refuse_while_running(core, "redo")
    rec = _recorder(core)
    store = rec.store()
    async with rec._lock:
        try:
            done = await asyncio.to_thread(store.redo)
        except CheckpointError as exc:
            raise Refused(str(exc)) from exc
    steps: list[int] = []
    if rec._redo_todos:
        todos = rec._redo_todos.pop()
        core.session.set_todos(todos, Actor.USER)
    steps = sorted(s for s, (state, _why) in rec.marks.items() if state == "reverted")
    for step in steps:
        rec.marks.pop(step, None)
    result = to_wire(done, steps)
    _tell(core, rec, "redone", result, "undid the last revert")
    return result


def _tell(
    core: WorkspaceParts, rec: Recorder, action: Literal["reverted", "redone"],
    result: r.RevertResult, did: str,
) -> None:  # fmt: skip
    """The update, and the conversation's note for the model."""
    parts = [f"The user {did}."]
    if result.stepsReverted:
        numbers = ", ".join(str(s) for s in result.stepsReverted)
        parts.append(
            f"Steps {numbers} of the plan were undone: their changes are gone and their todos "
            "are pending again." if action == "reverted"
            else f"Steps {numbers} of the plan are back as they were before the revert."
        )  # fmt: skip
    if result.restored:
        parts.append("Restored: " + ", ".join(result.restored) + ".")
    if result.kept:
        parts.append("Kept as the user has them: " + ", ".join(k.path for k in result.kept) + ".")
    message = " ".join(parts)
    session = core.session
    session.store.append_message(
        session.id, session.conversation, f"{action}-{result.checkpointId}",
        {"role": "user", "content": f"[plan-lsp] {message}"},
    )  # fmt: skip
    rec.emit(rec._update(action, message, result=result))


def _run_paths(cps: list[StoreCheckpoint], start: int, end: int) -> set[str]:
    """Paths the run changed between checkpoints `start` and `end` (positions)."""
    return {
        f.path
        for i in range(start + 1, end + 1)
        if cps[i - 1].kind not in CLOSING
        for f in cps[i].files
    }


def step_changes(core: Core, step: int) -> r.StepChanges:
    """What step `step` changed: its files with +/- and a unified diff (read-only)."""
    store = _recorder(core).store()
    cps = store.list()
    starts = [i for i, cp in enumerate(cps) if cp.step == step and cp.kind == BEFORE]
    if not starts:
        raise Refused(f"step {step} has no checkpoint: it never ran in this session")
    start = starts[0]
    later = [i for i, cp in enumerate(cps) if i > start and cp.step not in (None, step)]
    end = (later[0] - 1) if later else len(cps) - 1
    old, new = store.manifest(cps[start].id), store.manifest(cps[end].id)
    changes = store.changes(old, new, _run_paths(cps, start, end))
    files = [r.CheckpointFile(path=f.path, status=f.status, added=f.added, removed=f.removed)  # type: ignore[arg-type]
             for f in changes]  # fmt: skip
    diff: list[str] = []
    for f in changes:
        a, b = old.get(f.path), new.get(f.path)
        texts = []
        for e in (a, b):
            data = (
                store.blobs.get(e.ref)
                if e is not None and e.kind == FILE and e.size <= _DIFF_MAX_BYTES
                else b""
            )
            texts.append(data.decode("utf-8", "replace").splitlines(keepends=True))
        diff.extend(difflib.unified_diff(texts[0], texts[1], f"a/{f.path}", f"b/{f.path}"))
    return r.StepChanges(step=step, files=files, diff="".join(diff))


def step_states(core: Core) -> list[r.StepState]:
    """Each checklist item of the approved plan: where it is, why, and the checkpoint
    before it."""
    session = core.session
    if session.approved is None:
        return []
    rec = _recorder(core)
    texts = plan_steps(session.approved.text)
    numbers = todo_steps(session.approved.text, [(t.content, t.status) for t in session.todos])
    status = {numbers[i]: t.status for i, t in enumerate(session.todos) if i in numbers}
    starts: dict[int, str] = {}
    try:
        for cp in rec.store().list():
            if cp.kind == BEFORE and cp.step is not None and cp.tool_call_id is None:
                starts.setdefault(cp.step, cp.id)
    except Refused:
        pass
    out = []
    for n, text in enumerate(texts, 1):
        state: StepStateName
        reason: str | None = None
        if n in rec.marks:
            state, reason = rec.marks[n]
        elif status.get(n) == "completed":
            state = "done"
        elif status.get(n) == "in_progress":
            state = "running" if session.running else "failed"
            if state == "failed":
                reason = f"the run ended ({rec.stop_reason or 'stopped'}) while it was in progress"
        else:
            state = "not_reached"
            reason = "not reached"
        out.append(
            r.StepState(step=n, text=text, state=state, reason=reason, checkpointId=starts.get(n))
        )
    return out
