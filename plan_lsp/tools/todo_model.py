"""A todo item of the agent's list, and the rule the whole list obeys."""

from __future__ import annotations

from dataclasses import dataclass, field

from plan_lsp.protocol.state import Todo


def check_todos(todos: list[Todo]) -> None:
    """Raise ValueError unless at most one todo is in progress."""
    in_progress = [t for t in todos if t.status == "in_progress"]
    if len(in_progress) > 1:
        raise ValueError(
            f"at most one todo may be in_progress; {len(in_progress)} were: "
            + ", ".join(repr(t.content) for t in in_progress)
        )


@dataclass(frozen=True)
class RecordedTodos:
    """The list as the server keeps it, and what the model is told about the difference."""

    todos: list[Todo]
    notes: list[str] = field(default_factory=list)
