"""One session's state machine: work mode, permission mode, plan status, todos, approval.

Every change goes through a method here, is checked against the allowed transitions,
persisted together with an event naming who caused it, and announced to listeners.
Illegal transitions raise `TransitionRefused` with a reason a user can read.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from plan_lsp.plan.outcome import classify_outcome
from plan_lsp.policy.modes import Actor
from plan_lsp.policy.plan_paths import PlanPathResult
from plan_lsp.policy.plan_rounds import round_plan_path
from plan_lsp.policy.safe_fs import disk_text
from plan_lsp.protocol.state import (
    ApprovedPlan,
    Outcome,
    PermissionMode,
    PlanStatus,
    SessionContext,
    SessionState,
    SessionUsage,
    Todo,
    WorkMode,
)
from plan_lsp.session.plans import plan_records
from plan_lsp.session.store import StateStore
from plan_lsp.tools.todo_model import check_todos

log = logging.getLogger(__name__)

Listener = Callable[["Session", str, dict[str, Any]], None]


class TransitionRefused(ValueError):
    """A state change that is not allowed from the current state; the message says why."""


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# Which plan statuses each plan transition may start from. Data, so the rules read in one place.
_PLAN_TRANSITIONS: dict[str, frozenset[PlanStatus]] = {
    "draft": frozenset(PlanStatus),
    "submit": frozenset(
        {PlanStatus.NONE, PlanStatus.DRAFTING, PlanStatus.SUBMITTED, PlanStatus.REJECTED}
    ),
    # A rejected plan stays approvable, and revisable (a rejection with feedback): a
    # rejection without feedback is never a dead end. A plan the user wrote in the plan
    # document while the model submitted none (status none) is theirs to approve.
    "approve": frozenset(PlanStatus),
    "reject": frozenset({PlanStatus.SUBMITTED, PlanStatus.DRAFTING, PlanStatus.REJECTED}),
}


class Session:
    """The state of one workspace folder's session; safe to use from several threads."""

    def __init__(
        self,
        store: StateStore,
        workspace: Path,
        plans_dir: Path,
        default_permission_mode: PermissionMode = PermissionMode.ASK,
        default_mode: WorkMode = WorkMode.PLAN,
        session_id: str | None = None,
    ) -> None:
        """The folder's latest session, restored; `session_id`: that saved session, or a new
        one of that id (its first conversation named the same) when none is saved."""
        self.store = store
        self.workspace = workspace
        self.plans_dir = plans_dir
        self._lock = threading.RLock()
        self._listeners: list[Listener] = []
        self.running = False
        self.run_id: str | None = None
        self.context = SessionContext()
        self.usage = SessionUsage()
        # The file this planning round's default plan goes to, once chosen (`plan_target`).
        self._round_file: str | None = None
        # The plan files other open sessions (another window's) are planning in: never
        # written over by this session's rounds. Set by the core.
        self.held_elsewhere: Callable[[], list[str]] = list
        if session_id is None:
            restored = store.first_session(str(workspace))
        else:
            saved = store.session(session_id)
            restored = (session_id, saved) if saved is not None else None
        if restored is None:
            self.id = session_id or uuid.uuid4().hex[:12]
            self.mode = default_mode
            self.permission_mode = default_permission_mode
            self.plan_status = PlanStatus.NONE
            self.plan_path: str | None = None
            self.approved: ApprovedPlan | None = None
            self.todos: list[Todo] = []
            self.completed_do = False
            self.ever_planned = default_mode is WorkMode.PLAN
            self.task: str | None = None
            self.conversation = session_id or "main"
            # Plan files written since the last approval (a plan the user approves must be
            # the one they were shown: several candidates make an unnamed approval ambiguous).
            self.round_plans: list[str] = []
            self._persist("session_created", Actor.SYSTEM, {"mode": self.mode.value})
        else:
            self.id, data = restored
            self._load(data)
            self._persist(
                "session_restored",
                Actor.RESTORE,
                {"mode": self.mode.value, "planStatus": self.plan_status.value},
            )

    # -- persistence -----------------------------------------------------------------------

    def _dump(self) -> dict[str, Any]:
        return {
            "mode": self.mode.value,
            "permissionMode": self.permission_mode.value,
            "planStatus": self.plan_status.value,
            "planPath": self.plan_path,
            "approved": self.approved.model_dump() if self.approved else None,
            "todos": [t.model_dump() for t in self.todos],
            "completedDo": self.completed_do,
            "everPlanned": self.ever_planned,
            "task": self.task,
            "conversation": self.conversation,
            "roundPlans": list(self.round_plans),
            "usage": self.usage.model_dump(),
        }

    def _load(self, data: dict[str, Any]) -> None:
        self.mode = WorkMode(data.get("mode", "plan"))
        self.permission_mode = PermissionMode(data.get("permissionMode", "ask"))
        self.plan_status = PlanStatus(data.get("planStatus", "none"))
        self.plan_path = data.get("planPath")
        approved = data.get("approved")
        self.approved = ApprovedPlan.model_validate(approved) if approved else None
        self.todos = [Todo.model_validate(t) for t in data.get("todos", [])]
        self.completed_do = bool(data.get("completedDo", False))
        self.ever_planned = bool(data.get("everPlanned", False))
        self.task = data.get("task")
        self.conversation = str(data.get("conversation", "main"))
        try:
            self.usage = SessionUsage.model_validate(data.get("usage") or {})
        except ValueError:
            self.usage = SessionUsage()  # counters are not worth refusing a session over
        plans = data.get("roundPlans", [])
        self.round_plans = [str(p) for p in plans] if isinstance(plans, list) else []

    def _persist(
        self,
        kind: str,
        actor: Actor,
        data: dict[str, Any],
        revision: tuple[str, str, str] | None = None,
    ) -> int | None:
        return self.store.save(
            self.id, str(self.workspace), self._dump(), (kind, actor.value, data), revision
        )

    def _changed(
        self,
        kind: str,
        actor: Actor,
        data: dict[str, Any],
        revision: tuple[str, str, str] | None = None,
    ) -> int | None:
        rev = self._persist(kind, actor, data, revision)
        # A broken listener must not undo a committed change.
        self._announce(kind, data if rev is None else {**data, "rev": rev})
        return rev

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def record(self, kind: str, actor: Actor, data: dict[str, Any]) -> int:
        """Append an audit event (gate decisions, runs) without changing state."""
        return self.store.append_event(self.id, kind, actor.value, data)

    # -- queries ---------------------------------------------------------------------------

    @property
    def main_plan_path(self) -> Path:
        return Path(self.plan_path) if self.plan_path else self.plans_dir / "PLAN.md"

    def plan_target(self, plans_dir: Path, name: str | None) -> PlanPathResult:
        """The file this round's plan goes to (`name`: the model's, None for the default):
        every round keeps its own file, and an approved plan's file — this session's or an
        earlier one's — is never written over (`policy.plan_rounds.round_plan_path`)."""
        with self._lock:
            own = self.plan_path if self.plan_path in self.round_plans else self._round_file
            approved = self.approved.path if self.approved is not None else None
            records = plan_records(self.store, approved)
            held = tuple(Path(p) for p in self.held_elsewhere() if p != own)
            result = round_plan_path(
                plans_dir,
                name,
                round_path=Path(own) if own else None,
                records=replace(records, approved=records.approved + held),
                workspace=self.workspace,
            )
            if result.ok and name is None:
                # Chosen once per round: the draft's own (new) file does not move it on.
                self._round_file = result.resolved
            return result

    def outcome(self) -> Outcome:
        # Never through a link, never blocked on (a FIFO), never read unbounded.
        text = disk_text(self.main_plan_path)
        nonempty = text is not None and bool(text.strip())
        return Outcome(
            classify_outcome(
                ever_planned=self.ever_planned,
                mode=self.mode.value,
                plan_file_nonempty=nonempty,
                plan_status=self.plan_status.value,
                do_completed=self.completed_do,
            )
        )

    def state(self) -> SessionState:
        with self._lock:
            return SessionState(
                sessionId=self.id,
                mode=self.mode,
                permissionMode=self.permission_mode,
                planUri=self.main_plan_path.as_uri(),
                planStatus=self.plan_status,
                outcome=self.outcome(),
                todos=list(self.todos),
                running=self.running,
                runId=self.run_id,
                approvedPlan=self.approved,
                usage=self.usage.model_copy(),
                **self.context.model_dump(),
            )

    # -- transitions -----------------------------------------------------------------------

    def set_mode(self, mode: WorkMode, actor: Actor) -> bool:
        """Switch work mode. The model may only enter plan mode; leaving it takes approval
        or the user's own switch. Returns False when nothing changed."""
        with self._lock:
            if mode is self.mode:
                return False
            if actor is Actor.MODEL and mode is WorkMode.BUILD:
                raise TransitionRefused(
                    "the model cannot leave plan mode by itself; the user approves the plan "
                    "or switches to build mode"
                )
            previous = self.mode
            self.mode = mode
            if mode is WorkMode.PLAN:
                self.ever_planned = True
            self._changed("mode_changed", actor, {"from": previous.value, "to": mode.value})
            return True

    def set_permission_mode(self, mode: PermissionMode, actor: Actor) -> bool:
        with self._lock:
            if mode is self.permission_mode:
                return False
            previous = self.permission_mode
            self.permission_mode = mode
            self._changed(
                "permission_mode_changed", actor, {"from": previous.value, "to": mode.value}
            )
            return True

    def _check_plan_transition(self, action: str) -> None:
        if self.plan_status not in _PLAN_TRANSITIONS[action]:
            raise TransitionRefused(
                f"cannot {action} the plan while its status is '{self.plan_status.value}'"
            )

    def plan_drafting(self, path: Path, actor: Actor) -> None:
        with self._lock:
            if self.mode is not WorkMode.PLAN and actor is Actor.MODEL:
                raise TransitionRefused("plans are written in plan mode")
            self._check_plan_transition("draft")
            changed = self.plan_status is not PlanStatus.DRAFTING or self.plan_path != str(path)
            self.plan_status = PlanStatus.DRAFTING
            self.plan_path = str(path)
            if str(path) not in self.round_plans:
                self.round_plans.append(str(path))
                changed = True
            self.ever_planned = True
            if changed:
                self._changed("plan_drafting", actor, {"path": str(path)})

    def plan_submitted(self, path: Path, text: str, actor: Actor) -> int:
        with self._lock:
            if self.mode is not WorkMode.PLAN:
                raise TransitionRefused("a plan is submitted from plan mode")
            self._check_plan_transition("submit")
            digest = sha256_text(text)
            self.plan_status = PlanStatus.SUBMITTED
            self.plan_path = str(path)
            self.ever_planned = True
            # The revision and its event are written in one transaction.
            rev = self._changed(
                "plan_submitted",
                actor,
                {"path": str(path), "sha256": digest},
                revision=(str(path), text, digest),
            )
            assert rev is not None
            return rev

    def approve(
        self, path: Path, text: str, permission_mode: PermissionMode | None, actor: Actor
    ) -> ApprovedPlan | None:
        """Record the approved text and switch to build. Returns None when this exact text
        was already approved (a second click is a no-op)."""
        with self._lock:
            self._check_plan_transition("approve")
            digest = sha256_text(text)
            if (
                self.plan_status is PlanStatus.APPROVED
                and self.approved is not None
                and self.approved.sha256 == digest
                and self.approved.path == str(path)
            ):
                return None
            if not text.strip():
                raise TransitionRefused("the plan is empty; there is nothing to approve")
            self.approved = ApprovedPlan(
                path=str(path),
                text=text,
                sha256=digest,
                time=datetime.now(UTC).isoformat(timespec="seconds"),
            )
            self.plan_status = PlanStatus.APPROVED
            self.plan_path = str(path)
            self.completed_do = False
            self.round_plans = []
            self._round_file = None
            previous = self.mode
            self.mode = WorkMode.BUILD
            if permission_mode is not None:
                self.permission_mode = permission_mode
            self._changed(
                "plan_approved",
                Actor.APPROVAL if actor is Actor.USER else actor,
                {
                    "path": str(path),
                    "sha256": digest,
                    "from": previous.value,
                    "to": WorkMode.BUILD.value,
                    "permissionMode": self.permission_mode.value,
                },
            )
            return self.approved

    def reject(self, feedback: str | None, actor: Actor) -> None:
        with self._lock:
            self._check_plan_transition("reject")
            self.plan_status = PlanStatus.REJECTED
            self._changed("plan_rejected", actor, {"feedback": feedback or ""})

    def approved_text_changed(self, text: str) -> bool:
        """The approved plan's text changed after approval: back to drafting."""
        with self._lock:
            if self.plan_status is not PlanStatus.APPROVED or self.approved is None:
                return False
            if sha256_text(text) == self.approved.sha256:
                return False
            self.plan_status = PlanStatus.DRAFTING
            self._changed(
                "approved_plan_changed",
                Actor.USER,
                {"path": self.approved.path, "sha256": sha256_text(text)},
            )
            return True

    def set_todos(self, todos: list[Todo], actor: Actor) -> None:
        with self._lock:
            try:
                check_todos(todos)
            except ValueError as exc:
                raise TransitionRefused(str(exc)) from exc
            self.todos = list(todos)
            self._changed("todos", actor, {"todos": [t.model_dump() for t in todos]})

    def do_completed(self, run_id: str, open_steps: str | None = None) -> None:
        """The Do run ended; `open_steps`: which checklist items it left open, and why (the
        plan list then says "carried out partly", never "done")."""
        with self._lock:
            if self.plan_status is not PlanStatus.APPROVED:
                return
            self.completed_do = True
            self._changed("do_completed", Actor.MODEL, {"runId": run_id, "open": open_steps})

    def set_task(self, task: str) -> None:
        """The user's request that the current plan answers; carried into the Do run."""
        with self._lock:
            self.task = task
            self._changed("task_set", Actor.USER, {"task": task})

    def switch_conversation(self, conversation: str, reason: str) -> None:
        with self._lock:
            if conversation == self.conversation:
                return
            previous = self.conversation
            self.conversation = conversation
            self._changed(
                "conversation_switched",
                Actor.SYSTEM,
                {"from": previous, "to": conversation, "reason": reason},
            )

    def set_running(self, running: bool, run_id: str | None = None) -> None:
        with self._lock:
            self.running = running
            self.run_id = run_id if running else None
        self._announce("running", {"running": running, "runId": self.run_id})

    def set_context(self, **changes: Any) -> bool:
        """Update what the server knows about the session's surroundings (shell protection,
        provider, MCP servers, config warnings); listeners hear of a real change."""
        with self._lock:
            updated = self.context.model_copy(update=changes)
            updated = SessionContext.model_validate(updated.model_dump())
            if updated == self.context:
                return False
            self.context = updated
        self._announce("context", {"fields": sorted(changes)})
        return True

    def update_usage(self, **changes: Any) -> SessionUsage:
        """Record token usage (new totals, context size, window, compactions); persisted
        without an audit event, announced as `usage`. Returns the new figures."""
        with self._lock:
            self.usage = SessionUsage.model_validate({**self.usage.model_dump(), **changes})
            self.store.save(self.id, str(self.workspace), self._dump())
            usage = self.usage.model_copy()
        self._announce("usage", {})
        return usage

    def new_conversation(self, keep_approved_plan: bool, actor: Actor) -> str:
        """Start a new conversation: the model forgets what was said. With
        `keep_approved_plan` the approved plan (and build mode) stay; otherwise the session
        goes back to planning from scratch. Returns the new conversation id."""
        with self._lock:
            if self.running:
                raise TransitionRefused("a run is in progress; cancel it first")
            previous = self.conversation
            self.conversation = f"conv-{uuid.uuid4().hex[:8]}"
            # A new conversation starts empty; the session's token totals stay.
            self.usage = self.usage.model_copy(update={"contextTokens": 0})
            self.todos = []
            self.round_plans = []
            self._round_file = None
            if not keep_approved_plan:
                self.approved = None
                self.plan_status = PlanStatus.NONE
                self.task = None
                self.completed_do = False
                if self.mode is not WorkMode.PLAN:
                    self.mode = WorkMode.PLAN
                    self.ever_planned = True
            self._changed(
                "conversation_switched",
                actor,
                {
                    "from": previous,
                    "to": self.conversation,
                    "reason": "new session",
                    "keepApprovedPlan": keep_approved_plan,
                },
            )
            return self.conversation

    def _announce(self, kind: str, data: dict[str, Any]) -> None:
        """Tell listeners about a change that is not persisted (running, context)."""
        for listener in list(self._listeners):
            try:
                listener(self, kind, data)
            except Exception:
                log.exception("session listener failed for %s", kind)
