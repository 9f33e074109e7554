"""What happened during each step of the todo list, so the list the server keeps (and the
plan's checklist that mirrors it) marks done only what happened (docs/architecture.md).

Every call of a workspace-changing tool is observed with its outcome: a denied, refused or
failed change is a setback of the step in progress (else of the steps the next list newly
completes), made up by a later successful change of the same target. A step marked
`completed` with a setback outstanding stays `pending`, and the observation says why.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from plan_lsp.policy.safety import ToolDefinition
from plan_lsp.protocol.state import Todo
from plan_lsp.tools.todo_model import RecordedTodos

_MAX_TARGET = 120
_MAX_REASON = 200


@dataclass(frozen=True)
class Setback:
    """A change that did not happen: `what` is denied | refused | failed."""

    tool: str
    target: str
    what: str
    reason: str
    # What the call was, by its tool's definition: a file edit, a shell command, or a call.
    kind: Literal["edit", "command", "call"] = "call"

    def describe(self) -> str:
        if self.kind == "edit":
            subject = f"the edit of {self.target}"
        elif self.kind == "command":
            subject = f"the command `{self.target}`"
        else:
            subject = f"the call of {self.tool}"
        if self.what == "failed":
            return f"{subject} failed" + (f" ({self.reason})" if self.reason else "")
        return f"{subject} was {self.what}"


def _key(content: str) -> str:
    return " ".join(content.split()).casefold()


def _kind(definition: ToolDefinition) -> Literal["edit", "command", "call"]:
    if definition.role == "edit":
        return "edit"
    if definition.primary_argument is not None and definition.primary_argument.kind == "command":
        return "command"
    return "call"


def _target(definition: ToolDefinition, arguments: Mapping[str, Any] | str) -> str:
    """What a call changes, by its definition's primary argument (the file an edit changes,
    the command a shell runs); the tool's name for any other call."""
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            parsed = {}
        arguments = parsed if isinstance(parsed, dict) else {}
    spec = definition.primary_argument if _kind(definition) != "call" else None
    value = arguments.get(spec.name) if spec is not None else None
    if not isinstance(value, str) or not value.strip():
        return definition.name
    value = " ".join(value.split())
    return value if len(value) <= _MAX_TARGET else value[: _MAX_TARGET - 1] + "…"


def _what(data: Mapping[str, Any] | None) -> tuple[str, str]:
    data = data or {}
    error = data.get("error")
    reason = data.get("reason") or data.get("message") or ""
    reason = " ".join(str(reason).split())[:_MAX_REASON]
    if error == "permission_denied":
        return "denied", reason
    if error == "tool_not_allowed":
        return "refused", reason
    return "failed", reason


class StepLedger:
    """One run's record of setbacks per step of the todo list."""

    def __init__(self) -> None:
        # Setbacks since the last list, not yet given to a step.
        self._unassigned: list[Setback] = []
        # Outstanding setbacks per step (by its normalised text).
        self._held: dict[str, list[Setback]] = {}
        # The step in progress in the last list, and the steps it had completed.
        self._current: str | None = None
        self._completed: set[str] = set()

    def observe(
        self,
        definition: ToolDefinition,
        arguments: Mapping[str, Any] | str,
        is_error: bool,
        data: Mapping[str, Any] | None,
    ) -> None:
        """A call of a tool that changes the workspace ended (allowed or not); what the tool
        is (an edit, a command) is its definition's."""
        tool, kind = definition.name, _kind(definition)
        target = _target(definition, arguments)
        if not is_error:
            # The change happened after all: earlier setbacks of that target are made up (an
            # edit of a file by any edit tool).
            def made_up(setback: Setback) -> bool:
                return setback.target == target and (
                    setback.tool == tool or setback.kind == kind == "edit"
                )

            self._unassigned = [s for s in self._unassigned if not made_up(s)]
            for key in list(self._held):
                kept = [s for s in self._held[key] if not made_up(s)]
                if kept:
                    self._held[key] = kept
                else:
                    del self._held[key]
            return
        what, reason = _what(data)
        self._unassigned.append(Setback(tool, target, what, reason, kind))

    def record(self, todos: list[Todo]) -> RecordedTodos:
        """The list the model sent, with every step that has a setback outstanding kept
        from `completed`; notes say which and why."""
        if self._unassigned:
            if self._current is not None:
                owners = [self._current]
            else:
                owners = [
                    _key(t.content)
                    for t in todos
                    if t.status == "completed" and _key(t.content) not in self._completed
                ]
            for owner in owners:
                self._held.setdefault(owner, []).extend(self._unassigned)
            self._unassigned = []
        kept: list[Todo] = []
        notes: list[str] = []
        for number, todo in enumerate(todos, start=1):
            setbacks = self._held.get(_key(todo.content), [])
            if todo.status == "completed" and setbacks:
                why = "; ".join(dict.fromkeys(s.describe() for s in setbacks))
                notes.append(f"step {number} not marked done: {why}")
                todo = todo.model_copy(update={"status": "pending"})
            kept.append(todo)
        in_progress = [t for t in kept if t.status == "in_progress"]
        self._current = _key(in_progress[0].content) if in_progress else None
        self._completed = {_key(t.content) for t in kept if t.status == "completed"}
        return RecordedTodos(kept, notes)
