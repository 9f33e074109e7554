"""What a tool is: a definition with a safety label, and an async implementation.

The safety label is the one fact both gates read (DESIGN.md §3). Implementations never
decide whether they may run — `policy/` does, before they are called.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from plan_lsp.session.model import Todo


class Safety(StrEnum):
    READ_ONLY = "read_only"
    SIDE_EFFECT = "side_effect"
    # Writes only the plan document (plan_write); plan mode only.
    PLAN_FILE = "plan_file"
    # Changes the session's mode (enter_plan_mode, exit_plan_mode); checked per tool.
    CONTROL = "control"
    # Runs a subagent (task); the child inherits the parent's restrictions.
    SUBAGENT = "subagent"


class ToolDefinition(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    input_schema: dict[str, Any]
    safety: Safety
    # System tools pass a skill/subagent name allow-list, never the safety filter.
    system: bool = False
    timeout_s: float = 120.0
    # Safety of `bash` is decided per call by the shell classifier.
    classified_per_call: bool = False


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


class FileEdit(BaseModel):
    """A WorkspaceEdit-shaped change to one file: its whole new text, or text edits."""

    path: Path
    new_text: str
    # The text the change was computed against (None = file did not exist).
    old_text: str | None = None


class PermissionRequest(BaseModel):
    run_id: str
    tool: str
    summary: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class Question(BaseModel):
    id: str
    text: str
    options: list[str]
    multiple: bool = False


class EditorPort(Protocol):
    """What the editor offers below `server/`: open buffers and edits applied through it."""

    def open_document_text(self, path: Path) -> str | None:
        """The text of the open buffer for `path`, or None if the client has it closed."""

    async def apply_to_open_document(self, edit: FileEdit) -> bool:
        """Apply through `workspace/applyEdit`; False if the client refused."""


class UserPort(Protocol):
    async def request_permission(self, request: PermissionRequest) -> str:
        """One of allow_once, allow_always, reject_once, reject_always."""

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
    # Agent-state hooks (todo_write); set by the agent.
    set_todos: Callable[[list[Todo]], None] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def workspace(self) -> Path:
        return self.workspace_roots[0]


ToolImpl = Callable[[dict[str, Any], ToolContext], Awaitable[ToolResult]]


@dataclass(frozen=True)
class Tool:
    definition: ToolDefinition
    run: ToolImpl

    @property
    def name(self) -> str:
        return self.definition.name
