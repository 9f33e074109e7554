"""What a tool is: a definition with a safety label, and an async implementation.

The safety label is the one fact both gates read (README, "How 'in plan mode nothing
changes' is enforced"). Implementations never decide whether they may run — `policy/` does,
before they are called.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel

from plan_lsp.policy.ports import EditorPort, FileChange, PermissionPort
from plan_lsp.policy.safety import ToolDefinition
from plan_lsp.protocol.state import Question, Todo
from plan_lsp.tools.todo_model import RecordedTodos


class ToolResult(BaseModel):
    """An observation for the model. `content` is what the model reads."""

    content: str
    is_error: bool = False
    data: dict[str, Any] | None = None
    # exit_plan_mode ends the run's turn and waits for the user.
    ends_turn: bool = False

    @classmethod
    def error(cls, code: str, message: str, **extra: Any) -> ToolResult:
        payload: dict[str, Any] = {"error": code, "message": message, **extra}
        return cls(content=json.dumps(payload), is_error=True, data=payload)


class UserPort(PermissionPort, Protocol):
    async def ask_questions(
        self, run_id: str, questions: list[Question]
    ) -> dict[str, list[str]] | None:
        """Answers by question id, or None when the user dismissed."""


EventSink = Callable[[str, dict[str, Any]], None]
"""emit(kind, payload) → a `planLsp/update` notification for the current run."""


@dataclass
class ToolContext:
    """Everything a tool implementation may touch, handed down by the agent."""

    workspace_roots: list[Path]
    plans_dir: Path
    run_id: str
    editor: EditorPort
    user: UserPort
    emit: EventSink
    cancel: asyncio.Event = field(default_factory=asyncio.Event)
    # Set by the execution gate per call: run `bash` inside the read-only sandbox.
    sandbox_shell: bool = False
    # The model's id for this call (what `toolCall` updates carry as `toolCallId`).
    tool_call_id: str = ""
    # Agent-state hook for todo_write; set by the agent. Returns the list as the server keeps
    # it (a step whose change was denied or failed is not done) and notes for the model.
    set_todos: Callable[[list[Todo]], RecordedTodos | None] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def workspace(self) -> Path:
        return self.workspace_roots[0]


ToolImpl = Callable[[dict[str, Any], ToolContext], Awaitable[ToolResult]]
# What a call would change in a file, computed by the code the tool runs (edit tools only):
# the permission request shows it.
ChangeImpl = Callable[[dict[str, Any], ToolContext], Awaitable[FileChange | None]]


@dataclass(frozen=True)
class Tool:
    definition: ToolDefinition
    run: ToolImpl
    preview: ChangeImpl | None = None

    @property
    def name(self) -> str:
        return self.definition.name
