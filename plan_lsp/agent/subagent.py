"""The `task` tool: a subagent with its own conversation.

The child runs through the same gate and session as its parent, so it inherits the work
mode at every call, and its tool names are the intersection of the parent's allow-list
and the child set: it can never hold more than the parent.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from plan_lsp.policy.safety import Safety, ToolDefinition
from plan_lsp.providers.base import ChatMessage
from plan_lsp.tools.base import Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    from plan_lsp.agent.loop import Agent

# Tools a subagent never gets: it cannot spawn children, submit plans or change modes.
CHILD_EXCLUDED = frozenset({"task", "plan_write", "exit_plan_mode", "enter_plan_mode"})

TASK = ToolDefinition(
    name="task",
    description=(
        "Delegate a self-contained research or coding task to a subagent with a fresh "
        "context. It has the same restrictions as you. Returns its final answer."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "prompt": {"type": "string", "description": "what the subagent should do"},
            "description": {"type": "string", "description": "a short label"},
        },
        "required": ["prompt"],
        "additionalProperties": False,
    },
    safety=Safety.SUBAGENT,
)


def child_allow_names(agent: Agent, parent: frozenset[str] | None) -> frozenset[str]:
    names = frozenset(d.name for d in agent.registry.definitions()) - CHILD_EXCLUDED
    return names if parent is None else names & parent


def task_tool(agent: Agent) -> Tool:
    async def run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        parent_allow = ctx.extra.get("allow_names")
        allow = child_allow_names(agent, parent_allow)
        conversation = f"task-{uuid.uuid4().hex[:10]}"
        ctx.emit(
            "toolCall",
            {"tool": "task", "subagent": conversation, "description": args.get("description")},
        )
        result = await agent.run(
            ctx.run_id,
            ChatMessage(role="user", content=str(args["prompt"]), meta={"kind": "task"}),
            ctx.cancel,
            conversation=conversation,
            allow_names=allow,
            emit_done=False,
        )
        if result.stop_reason not in ("end_turn",):
            return ToolResult.error(
                "subagent_stopped",
                f"the subagent stopped ({result.stop_reason})",
                answer=result.text,
            )
        return ToolResult(content=result.text or "(the subagent gave no answer)")

    return Tool(TASK, run)
