"""What happened during each step of the todo list, so the list the server keeps (and the
plan's checklist that mirrors it) marks done only what happened.

The rule is data, not a reading of the model's words: every call of a tool that changes
the workspace is observed with its outcome. A change that was denied (the user answered
no), refused (the gate) or failed is a *setback* of the step in progress when it happened
— or, while no step was in progress, of the steps the next list newly marks completed. A later
successful change of the same target (the same file, the same command) makes up for it.

When the model marks a step `completed` while it has a setback outstanding, the server keeps
the step `pending` and says why in the `todo_write` observation: "step 2 not marked done:
the edit of app.py was denied". The model's list is otherwise kept as it sent it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from plan_lsp.tools.todo_model import Todo

_EDIT_TOOLS = frozenset({"write_file", "edit_file"})
_MAX_TARGET = 120
_MAX_REASON = 200


@dataclass(frozen=True)
class Setback:
    """A change that did not happen: `what` is denied | refused | failed."""

    tool: str
    target: str
    what: str
    reason: str

    def describe(self) -> str:
        if self.tool in _EDIT_TOOLS:
            subject = f"the edit of {self.target}"
        elif self.tool == "bash":
            subject = f"the command `{self.target}`"
        else:
            subject = f"the call of {self.tool}"
        if self.what == "failed":
            return f"{subject} failed" + (f" ({self.reason})" if self.reason else "")
        return f"{subject} was {self.what}"


@dataclass(frozen=True)
class RecordedTodos:
    """The list as the server keeps it, and what the model is told about the difference."""

    todos: list[Todo]
    notes: list[str] = field(default_factory=list)


def _key(content: str) -> str:
    return " ".join(content.split()).casefold()


def _target(tool: str, arguments: Mapping[str, Any] | str) -> str:
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            parsed = {}
        arguments = parsed if isinstance(parsed, dict) else {}
    if tool in _EDIT_TOOLS:
        value = arguments.get("path")
    elif tool == "bash":
        value = arguments.get("command")
    else:
        value = None
    if not isinstance(value, str) or not value.strip():
        return tool
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
        tool: str,
        arguments: Mapping[str, Any] | str,
        is_error: bool,
        data: Mapping[str, Any] | None,
    ) -> None:
        """A call of a tool that changes the workspace ended (allowed or not)."""
        target = _target(tool, arguments)
        if not is_error:
            # The change happened after all: earlier setbacks of that target are made up.
            def made_up(setback: Setback) -> bool:
                return setback.target == target and (
                    setback.tool == tool or {setback.tool, tool} <= _EDIT_TOOLS
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
        self._unassigned.append(Setback(tool, target, what, reason))

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
