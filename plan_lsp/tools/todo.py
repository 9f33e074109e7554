"""todo_write: the agent's whole todo list, rewritten at once."""

from __future__ import annotations

from typing import Any

from plan_lsp.policy.arguments import ArgumentModel
from plan_lsp.policy.safety import Safety, ToolDefinition
from plan_lsp.protocol.state import Todo
from plan_lsp.tools.base import Tool, ToolContext, ToolResult
from plan_lsp.tools.todo_model import check_todos

_MARKS = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}


class TodoWriteArguments(ArgumentModel):
    todos: list[Todo]


def render_todos(todos: list[Todo]) -> str:
    if not todos:
        return "(the todo list is empty)"
    return "\n".join(f"{_MARKS[t.status]} {t.content}" for t in todos)


async def todo_write(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    todos = TodoWriteArguments.model_validate(args).todos  # as the runner checked them
    try:
        check_todos(todos)
    except ValueError as exc:
        return ToolResult.error("invalid_todos", str(exc))
    if ctx.set_todos is None:
        return ToolResult.error("unavailable", "this run has no todo list")
    try:
        recorded = ctx.set_todos(todos)
    except ValueError as exc:  # the session refused the list
        return ToolResult.error("invalid_todos", str(exc))
    kept = recorded.todos if recorded is not None else todos
    notes = recorded.notes if recorded is not None else []
    # The list as the server keeps it: a step whose change was denied or failed is not done.
    content = render_todos(kept) + "".join(f"\n{note}" for note in notes)
    data: dict[str, Any] = {"todos": [t.model_dump() for t in kept]}
    if notes:
        data["notes"] = notes
    return ToolResult(content=content, data=data)


TODO_WRITE_TOOL = Tool(
    ToolDefinition(
        name="todo_write",
        description=(
            "Replace the whole todo list. Each item has `content` and `status` "
            "(pending | in_progress | completed); at most one item may be in_progress."
        ),
        arguments=TodoWriteArguments,
        safety=Safety.READ_ONLY,
        system=True,
        timeout_s=10.0,
        role="agent",
    ),
    todo_write,
)
