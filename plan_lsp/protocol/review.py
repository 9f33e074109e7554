"""The contract of plan review: comments on plan lines and the second reader."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from plan_lsp.protocol.params import WireModel, WorkspaceParams


class Position(WireModel):
    line: int = Field(ge=0, description="Zero-based line.")
    character: int = Field(ge=0, description="Column, in the negotiated position encoding.")


class Range(WireModel):
    """LSP's range, in the position encoding negotiated at `initialize`."""

    start: Position = Field(description="Where it starts.")
    end: Position = Field(description="Where it ends (exclusive).")


class PlanParams(WorkspaceParams):
    planUri: str | None = Field(
        default=None, description="The plan document; default: the session's current plan."
    )


class CommentOnPlanParams(PlanParams):
    range: Range = Field(description="The lines commented on (a selection, or the cursor).")
    text: str | None = Field(
        default=None,
        max_length=20_000,
        description="The comment. Without one, a `> comment: ` line is put under the lines "
        "for the user to type it.",
    )


class PlanComment(WireModel):
    id: str = Field(description="Stable while the comment lives.")
    range: Range = Field(description="Whole lines, where the comment is now.")
    quote: str = Field(description="The text of the lines commented on.")
    text: str = Field(description="The comment.")
    status: Literal["open", "addressed"] = Field(
        description="`addressed`: a revision changed its lines; `open`: not yet."
    )
    sent: bool = Field(description="Sent to the model with a revision request.")


class CommentsResult(WireModel):
    comments: list[PlanComment] = Field(description="Kept ones, then `> comment:` lines.")


class ReviewResult(WireModel):
    findings: int = Field(description="How many problems the reviewer reported.")
    stopReason: str = Field(description="Why the reviewer's run stopped (`end_turn`, …).")
