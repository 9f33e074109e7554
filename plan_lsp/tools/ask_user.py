"""ask_user: a questionnaire the client answers (`planLsp/askUser`, docs/protocol.md)."""

from __future__ import annotations

import json
from typing import Any

from pydantic import Field

from plan_lsp.policy.arguments import ArgumentModel
from plan_lsp.policy.safety import Safety, ToolDefinition
from plan_lsp.protocol.state import Question
from plan_lsp.tools.base import Tool, ToolContext, ToolResult


# A question as the model asks it (a `Question` once checked).
class AskedQuestion(ArgumentModel):
    id: str = Field(min_length=1)
    text: str = Field(min_length=1)
    options: list[str] = Field(min_length=1)
    multiple: bool | None = None


class AskUserArguments(ArgumentModel):
    questions: list[AskedQuestion] = Field(min_length=1)


async def ask_user(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    parsed = [  # as the runner checked them
        Question(id=q.id, text=q.text, options=q.options, multiple=bool(q.multiple))
        for q in AskUserArguments.model_validate(args).questions
    ]
    ids = [q.id for q in parsed]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        return ToolResult.error(
            "invalid_arguments", f"question ids must be unique; repeated: {', '.join(duplicates)}"
        )
    answers = await ctx.user.ask_questions(ctx.run_id, parsed)
    if answers is None:
        payload: dict[str, Any] = {"dismissed": True}
        return ToolResult(
            content=json.dumps(
                {**payload, "message": "the user dismissed the questions without answering"}
            ),
            data=payload,
        )
    known = {q.id for q in parsed}
    cleaned = {k: [str(c) for c in v] for k, v in answers.items() if k in known}
    unanswered = sorted(known - set(cleaned))
    payload = {"answers": cleaned}
    if unanswered:
        payload["unanswered"] = unanswered
    return ToolResult(content=json.dumps(payload, ensure_ascii=False), data=payload)


ASK_USER_TOOL = Tool(
    ToolDefinition(
        name="ask_user",
        description=(
            "Ask the user one or more multiple-choice questions and wait for the answers. "
            "Each question has an `id`, `text`, `options` and optionally `multiple` "
            "(several options may be chosen)."
        ),
        arguments=AskUserArguments,
        safety=Safety.READ_ONLY,
        # The user may take their time answering.
        timeout_s=3600.0,
        role="agent",
    ),
    ask_user,
)
