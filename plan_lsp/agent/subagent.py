"""The `task` tool: a subagent with its own conversation.

The child runs through the same gate and session as its parent, so it inherits the work
mode at every call, and its tool names are the intersection of the parent's allow-list
and the child set: it can never hold more than the parent.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from pydantic import Field

from plan_lsp.policy.arguments import ArgumentModel
from plan_lsp.policy.safety import Safety, ToolDefinition
from plan_lsp.providers.base import ChatMessage
from plan_lsp.tools.base import Tool, ToolContext, ToolResult

# Tools a subagent never gets: it cannot spawn children, submit plans or change modes.
CHILD_EXCLUDED = frozenset({"task", "plan_write", "exit_plan_mode", "enter_plan_mode"})


class TaskArguments(ArgumentModel):
    prompt: str = Field(min_length=1, description="what the subagent should do")
    description: str | None = Field(default=None, description="a short label")


TASK = ToolDefinition(
    name="task",
    description=(
        "Delegate a self-contained research or coding task to a subagent with a fresh "
        "context. It has the same restrictions as you. Returns its final answer."
    ),
    arguments=TaskArguments,
    safety=Safety.SUBAGENT,
)


# Runs a child conversation (run id, opening message, cancel, conversation, allowed tool
# names) to its end: its stop reason and final text. The agent loop hands it in.
RunChild = Callable[
    [str, ChatMessage, asyncio.Event, str, frozenset[str]], Awaitable[tuple[str, str]]
]


def task_tool(run_child: RunChild, tool_names: Callable[[], frozenset[str]]) -> Tool:
    async def run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        allow = tool_names() - CHILD_EXCLUDED
        parent_allow: frozenset[str] | None = ctx.extra.get("allow_names")
        allow = allow if parent_allow is None else allow & parent_allow
        conversation = f"task-{uuid.uuid4().hex[:10]}"
        ctx.emit(
            "toolCall",
            {"tool": "task", "subagent": conversation, "description": args.get("description")},
        )
        stop_reason, text = await run_child(
            ctx.run_id,
            ChatMessage(role="user", content=str(args["prompt"]), meta={"kind": "task"}),
            ctx.cancel,
            conversation,
            allow,
        )
        if stop_reason != "end_turn":
            return ToolResult.error(
                "subagent_stopped", f"the subagent stopped ({stop_reason})", answer=text
            )
        return ToolResult(content=text or "(the subagent gave no answer)")

    return Tool(TASK, run)


# -- the plan's second reader ----------------------------------------------------------------

REVIEW_PROMPT = """You are a second reader of a plan, with a fresh context. Read the plan below \
and, with your read-only tools, the workspace it is about. Report concrete problems only: a \
file or symbol that does not exist, a step that cannot work as written, a missing step, a \
step nothing checks, a risk the plan ignores. You cannot change anything.

Answer with one finding per line, as `L<number>: <problem>`, <number> being the plan's line \
(as numbered below). Answer `No problems.` if you find none.

The plan ({path}):
{numbered}"""

_FINDING_RE = re.compile(r"^\s*(?:[-*]\s*)?(?:L|line\s*)(\d{1,7})\s*[:.)-]\s*(\S.*)$", re.I)


def review_request(path: str, text: str) -> ChatMessage:
    numbered = "\n".join(f"{n:>4}  {line}" for n, line in enumerate(text.splitlines(), 1))
    prompt = REVIEW_PROMPT.format(path=path, numbered=numbered)
    return ChatMessage(role="user", content=prompt, meta={"kind": "review"})


def reviewer_tools(definitions: Iterable[ToolDefinition]) -> frozenset[str]:
    """The reviewer's tools: read-only ones only, never a subagent, a plan write or a mode
    switch (the execution gate checks every call against this list)."""
    return frozenset(
        d.name for d in definitions if d.safety is Safety.READ_ONLY and d.name not in CHILD_EXCLUDED
    )


def review_findings(answer: str) -> list[tuple[int, str]]:
    """(plan line, problem) of each `L<n>: …` line of the reviewer's answer."""
    found = []
    for line in answer.splitlines():
        match = _FINDING_RE.match(line)
        if match and int(match.group(1)) >= 1:
            found.append((int(match.group(1)), match.group(2).strip()))
    return found
