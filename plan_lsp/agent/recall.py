"""`recall_output`: a tool output that compaction pruned from the model's context, shown
again by its call id (the store keeps every output). Read-only: it reads the session's own
conversation store, nothing of the workspace. Offered only once a conversation was compacted.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from plan_lsp.policy.arguments import ArgumentModel
from plan_lsp.policy.safety import Safety, ToolDefinition
from plan_lsp.session import Session
from plan_lsp.tools.base import Tool, ToolContext, ToolResult

RECALL_OUTPUT = "recall_output"

# One page of a recalled output; `offset` pages on.
PAGE_CHARS = 20_000


class RecallArguments(ArgumentModel):
    id: str = Field(description="the tool call id the stub names")
    offset: int | None = Field(default=None, ge=0, description="character offset")


DEFINITION = ToolDefinition(
    name=RECALL_OUTPUT,
    description=(
        "Show again a tool output that was pruned from the conversation to save context "
        "(the stub names its id). Long outputs come in pages of 20,000 characters: pass "
        "`offset` to read on."
    ),
    arguments=RecallArguments,
    safety=Safety.READ_ONLY,
)


def recall_tool(session: Session) -> Tool:
    async def run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        parsed = RecallArguments.model_validate(args)  # as the runner checked them
        call_id, offset = parsed.id, parsed.offset or 0
        if not call_id:
            return ToolResult.error("invalid_arguments", "id must be the tool call id of a stub")
        found = session.store.tool_output(session.id, call_id)
        if found is None:
            return ToolResult.error(
                "not_found", f"no tool output with id {call_id!r} in this session"
            )
        page = found[offset : offset + PAGE_CHARS]
        rest = len(found) - offset - len(page)
        more = f"\n[{rest:,} more characters: offset={offset + len(page)}]" if rest > 0 else ""
        return ToolResult(content=page + more, data={"id": call_id, "chars": len(found)})

    return Tool(DEFINITION, run)
