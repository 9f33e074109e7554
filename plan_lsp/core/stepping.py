"""Step mode of the Do run (`do_mode = "stepwise"`, or the approval's `doMode`): the run stops
after each checklist item of the approved plan is done, saying what the step changed, and goes
on only when the user runs the next step (`planLsp.runNextStep`) or the rest
(`planLsp.runRest`). The model gets one step as its instruction, the whole plan as context.

Where the run is comes from the checklist (the todos mirrored onto the approved plan), never
from a counter: after a revert (the checklist goes back with it) or a prompt while paused,
the next step is the first item not done. A prompt while paused is an ordinary run in the Do
run's conversation: it does not stop at a step and does not end the pause."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from plan_lsp.core.frontend import Refused
from plan_lsp.core.parts import WorkspaceParts
from plan_lsp.core.runs import RunBusy, RunManager
from plan_lsp.plan.checklist import plan_steps, todo_steps
from plan_lsp.protocol.state import DoMode, PlanStatus, StepProgress, WorkMode
from plan_lsp.session import Actor

if TYPE_CHECKING:
    from plan_lsp.providers.base import ChatMessage

STEP_RULE = (
    "Step mode: carry out only this step now. Mark it `in_progress` with `todo_write` when "
    "you begin and `completed` when it is done, then stop; the user looks at its changes "
    "and runs the next step. Do not start later steps."
)


class SteppingCore(WorkspaceParts, Protocol):
    """A workspace's core as step mode uses it (typed here: the core builds `Stepping`)."""

    @property
    def runs(self) -> RunManager: ...


class Stepping:
    """One per workspace: the do mode of the approved plan's run, and where a stepwise run
    stopped (shown in `SessionState.stepping`)."""

    def __init__(self, core: SteppingCore) -> None:
        self.core = core
        self.mode: DoMode = core.config.do_mode
        self._plan: str | None = None  # sha256 of the plan carried out step by step
        self._run: str | None = None  # the stepwise run in progress
        self._open_at_start: set[int] = set()
        self._stop = False
        self._paused = False  # the last stepwise run stopped after its step
        self._last_step: int | None = None
        self._last_files: list[str] = []
        core.session.add_listener(self._changed)

    # -- the checklist --------------------------------------------------------------------------

    def steps(self) -> list[tuple[str, bool]]:
        """The approved plan's checklist items (text, done), as the todos mark them."""
        approved = self.core.session.approved
        if approved is None:
            return []
        todos = self.core.session.todos
        numbers = todo_steps(approved.text, [(t.content, t.status) for t in todos])
        done = {numbers[i] for i, t in enumerate(todos) if i in numbers and t.status == "completed"}
        return [(text, n in done) for n, text in enumerate(plan_steps(approved.text), 1)]

    def _open(self) -> list[int]:
        return [n for n, (_, done) in enumerate(self.steps(), 1) if not done]

    def active(self) -> bool:
        """The approved plan is carried out step by step (not yet finished)."""
        session = self.core.session
        approved = session.approved
        return (
            self.mode == "stepwise"
            and approved is not None
            and approved.sha256 == self._plan
            and session.plan_status is PlanStatus.APPROVED
        )

    # -- starting -------------------------------------------------------------------------------

    def choose(self, mode: DoMode | None) -> None:
        """At approval: how this plan is carried out (default: the configuration's)."""
        self.mode = mode or self.core.config.do_mode
        self._paused = False

    def opening(self, message: ChatMessage) -> ChatMessage:
        """The Do run's opening (the whole plan): in step mode, with its first step as the
        instruction."""
        approved = self.core.session.approved
        if self.mode != "stepwise" or approved is None:
            return message
        self._plan = approved.sha256
        steps = self.steps()
        open_steps = self._open()
        if not open_steps:
            return message
        n = open_steps[0]
        self._begin(open_steps)
        text = f"{message.content}\n\n{self._instruction(n, steps)}"
        return type(message)(role=message.role, content=text, meta=message.meta)

    def _instruction(self, n: int, steps: list[tuple[str, bool]]) -> str:
        return f"Now step {n} of {len(steps)}: {steps[n - 1][0]}\n{STEP_RULE}"

    def _begin(self, open_steps: list[int]) -> None:
        self._open_at_start = set(open_steps)
        self._stop = False
        self._paused = False
        self._run = "pending"
        self.core.runs.agent.stop_after_step = self._stop_here

    def run_next(self, step: int | None = None) -> None:
        """Run one step (default: the first not done) of the approved plan, then stop."""
        from plan_lsp.providers.base import ChatMessage

        steps, open_steps = self._ready()
        n = step or open_steps[0]
        if not 1 <= n <= len(steps):
            raise Refused(f"there is no step {n}: the approved plan has {len(steps)} steps")
        if n not in open_steps:
            raise Refused(f"step {n} is done already; revert to before it to run it again")
        self.mode = "stepwise"
        self._begin(open_steps)
        content = f"Carry out step {n} of the approved plan. {self._instruction(n, steps)}"
        message = ChatMessage(role="user", content=content, meta={"kind": "step", "step": n})
        self._start(message, f"Run step {n}: {steps[n - 1][0]}")

    def run_rest(self) -> None:
        """Run every step not done yet, in order, without stopping."""
        from plan_lsp.providers.base import ChatMessage

        _, open_steps = self._ready()
        self.mode = "continuous"
        self._run = None
        names = ", ".join(str(n) for n in open_steps)
        content = (
            f"Carry out the remaining steps of the approved plan ({names}), in order, marking "
            "each with `todo_write` as you go; step mode is off."
        )
        message = ChatMessage(role="user", content=content, meta={"kind": "step", "rest": True})
        self._start(message, f"Run the rest: steps {names}")

    def _ready(self) -> tuple[list[tuple[str, bool]], list[int]]:
        session = self.core.session
        if session.plan_status is not PlanStatus.APPROVED or session.approved is None:
            raise Refused("there is no approved plan to carry out; approve a plan first")
        if self.core.runs.current is not None:
            raise Refused("a run is in progress; wait for it or cancel it first")
        steps = self.steps()
        open_steps = self._open()
        if not open_steps:
            raise Refused("every step of the approved plan is done")
        self._plan = session.approved.sha256
        return steps, open_steps

    def _start(self, message: ChatMessage, shown: str) -> None:
        session = self.core.session
        # A step is carried out in build mode, whatever the mode after the last run was.
        session.set_mode(WorkMode.BUILD, Actor.USER)
        try:
            self.core.runs.start("do", message, do_run=True, shown=shown)
        except RunBusy as exc:
            self._run = None
            raise Refused(str(exc)) from exc

    # -- stopping -------------------------------------------------------------------------------

    def _stop_here(self, run_id: str) -> bool:
        return self._stop and run_id == self._run

    def _changed(self, session: object, kind: str, data: Mapping[str, object]) -> None:
        if kind in ("context", "usage"):
            return
        if kind == "running":
            self._running(bool(data.get("running")), data.get("runId"))
        elif kind == "todos" and self._run not in (None, "pending") and not self._stop:
            open_now = self._open()
            done = sorted(self._open_at_start.difference(open_now))
            if done and open_now:
                # A step is done and others are left: the run stops after this batch of calls.
                self._stop = True
                self._last_step = done[0]
        self.core.session.set_context(stepping=self.progress())

    def _running(self, running: bool, run_id: object) -> None:
        if running and self._run == "pending":
            self._run = str(run_id)
            self._last_files = []
        elif not running and self._run not in (None, "pending"):
            self._paused = self._stop
            self._run = None
            self._stop = False
            if self._paused:
                self._last_files = self._files(self._last_step)
                self.core.frontend.show(self.progress().summary)

    def _files(self, step: int | None) -> list[str]:
        """What step `step` changed, as `path (+a -r)`, from its checkpoints."""
        from plan_lsp.core import checkpointing

        try:
            changes = checkpointing.step_changes(self.core, step) if step else None
        except Refused:
            return []
        return [f"{f.path} (+{f.added} -{f.removed})" for f in changes.files] if changes else []

    def progress(self) -> StepProgress:
        """Where step mode is, for `SessionState.stepping`."""
        if not self.active():
            return StepProgress(doMode=self.mode)
        steps = self.steps()
        open_steps = self._open()
        total = len(steps)
        if not open_steps:
            return StepProgress(doMode=self.mode, steps=total, summary=f"All {total} steps done.")
        n = open_steps[0]
        if self._run is not None:
            summary = f"Running step {n} of {total} (step mode)."
            return StepProgress(doMode=self.mode, nextStep=n, steps=total, summary=summary)
        after = n - 1 if n > 1 else None
        changed = "; ".join(self._last_files) or "no file changes recorded"
        if self._paused and after is not None:
            summary = f"Paused after step {after} of {total}: {changed}. "
        else:
            summary = f"Stopped before step {n} of {total}. "
        summary += f"Next: step {n}, {steps[n - 1][0]} (Run next step, or Run the rest)."
        return StepProgress(
            doMode=self.mode, pausedAfterStep=after, nextStep=n, steps=total, summary=summary
        )
