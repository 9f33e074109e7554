"""Checkpoints of the Do run (docs/checkpoints.md), the core API both front-ends use: list,
revert, redo, a step's changes, the steps' states. The recorder the run drives is
`recorder.py`."""

from __future__ import annotations

import asyncio
import difflib
from collections.abc import Callable
from typing import Literal, Protocol

from plan_lsp.core.checklist import ChecklistMirror
from plan_lsp.core.frontend import Refused
from plan_lsp.core.parts import WorkspaceParts
from plan_lsp.core.recorder import Recorder, StepStateName, to_wire
from plan_lsp.plan.checklist import plan_steps, todo_steps
from plan_lsp.policy.safe_fs import disk_text
from plan_lsp.protocol import results as r
from plan_lsp.session import Actor
from plan_lsp.session.checkpoints import BEFORE, CheckpointError
from plan_lsp.session.checkpoints import Checkpoint as StoreCheckpoint
from plan_lsp.session.checkpoints import RevertResult as StoreResult
from plan_lsp.session.checkpoints.model import CLOSING, PRE_REVERT
from plan_lsp.session.checkpoints.snapshot import FILE

_DIFF_MAX_BYTES = 1 << 20


class _Runs(Protocol):
    @property
    def checkpoints(self) -> Recorder: ...

    @property
    def checklist(self) -> ChecklistMirror: ...


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
    cps = store.list()
    steps = sorted({cp.step for cp in cps[at:] if cp.step})
    paths = _run_paths(cps, at, len(cps) - 1)
    done = await _apply(
        core, "revert", paths, lambda: store.revert(checkpoint_id, None, rec._plan_rel())
    )
    session = core.session
    rec._redo.append((list(session.todos), set(done.restored) | set(done.merged)))
    if session.approved is not None and steps:
        numbers = todo_steps(session.approved.text, [(t.content, t.status) for t in session.todos])
        todos = [
            t.model_copy(update={"status": "pending"}) if numbers.get(i) in steps else t
            for i, t in enumerate(session.todos)
        ]
        session.set_todos(todos, Actor.USER)
    await core.runs.checklist.settle()  # the plan's checklist marks, in the buffer and on disk
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
    todos, paths = rec._redo.pop() if rec._redo else (None, set())
    done = await _apply(core, "redo", paths, store.redo)
    if todos is not None:
        core.session.set_todos(todos, Actor.USER)
        await core.runs.checklist.settle()
    steps = sorted(s for s, (state, _why) in rec.marks.items() if state == "reverted")
    for step in steps:
        rec.marks.pop(step, None)
    result = to_wire(done, steps)
    _tell(core, rec, "redone", result, "undid the last revert")
    return result


async def _apply(
    core: Core, what: str, paths: set[str], change: Callable[[], StoreResult]
) -> StoreResult:
    """A revert or redo, off the event loop; then each open buffer of a path it wrote that
    held what was on disk holds the new text (saved); a buffer with unsaved changes of the
    user's stays as it is."""
    rec, front = _recorder(core), core.frontend
    clean = {p for p in paths if front.buffer_text(core.root / p) == disk_text(core.root / p)}
    async with rec._lock:
        try:
            done = await asyncio.to_thread(change)
        except CheckpointError as exc:
            raise Refused(f"the {what} did not happen: {exc}") from exc
    for path in (core.root / p for p in [*done.restored, *done.merged] if p in clean):
        text = disk_text(path)
        if text is not None and front.buffer_text(path) not in (None, text):
            await front.edit_and_save(path, text, "plan-lsp: revert")
            await front.save_buffer(path)
    return done


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
    """What step `step` changed (not the approved plan's checklist marks): its files with
    +/- and a unified diff (read-only)."""
    store = _recorder(core).store()
    cps = store.list()
    starts = [i for i, cp in enumerate(cps) if cp.step == step and cp.kind == BEFORE]
    if not starts:
        raise Refused(f"step {step} has no checkpoint: it never ran in this session")
    start = starts[0]
    later = [i for i, cp in enumerate(cps) if i > start and cp.step not in (None, step)]
    end = (later[0] - 1) if later else len(cps) - 1
    old, new = store.manifest(cps[start].id), store.manifest(cps[end].id)
    # The checklist marks the server mirrors onto the plan are not the step's changes.
    paths = _run_paths(cps, start, end) - {_recorder(core)._plan_rel()}
    changes = store.changes(old, new, paths)
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


def open_steps(core: Core) -> str | None:
    """What a "done" would hide: "carried out partly: steps 2 and 4 open (2 denied: …; 4 not
    reached)" while a checklist item of the approved plan is not done; None when all are."""
    left = [s for s in step_states(core) if s.state != "done"]
    if not left:
        return None
    numbers = [str(s.step) for s in left]
    named = numbers[0] if len(left) == 1 else f"s {', '.join(numbers[:-1])} and {numbers[-1]}"
    why = "; ".join(
        f"{s.step} {s.state.replace('_', ' ')}"
        + (f": {s.reason}" if s.state in ("denied", "failed") and s.reason else "")
        for s in left
    )
    return f"carried out partly: step{named} open ({why})"
