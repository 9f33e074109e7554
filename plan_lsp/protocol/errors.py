"""Why a run ended, the failures a user can act on, and calls a mode switch stopped."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from plan_lsp.protocol.params import WireModel

StopReason = Literal[
    "end_turn",
    "plan_submitted",
    "cancelled",
    "error",
    "max_steps",
    "timeout",
    "limit",
    "context_full",
    "step_done",
]
"""Why a run ended: the model answered without a tool call (`end_turn`), `exit_plan_mode`
submitted the plan (`plan_submitted`), the user or a mode switch stopped it (`cancelled`), a
failure (`error`), the step limit (`max_steps`), the run time limit (`timeout`), the run's
token or cost limit (`limit`), or a request that does not fit the context window even after
compaction (`context_full`), or a Do run in step mode stopped after a step (`step_done`)."""

ErrorCode = Literal[
    "provider_unconfigured",
    "provider_unreachable",
    "provider_auth",
    "provider_model",
    "provider_not_found",
    "provider_no_tools",
    "provider_rate_limited",
    "provider_failed",
    "limit",
    "context_full",
]
"""Failures the user can act on; clients key their help on these: the model provider's
(`provider_*`), a run's token or cost limit (`limit`, config `limits`), a context window too
small for the next request even after compaction (`context_full`, config `context_window`)."""

FixSetting = Literal["baseUrl", "model", "provider", "apiKey"]


class ErrorFix(WireModel):
    """What fixes an error: the client-facing name of the setting to change (empty when no
    setting helps, e.g. a rate limit)."""

    setting: FixSetting | None = Field(
        default=None, description="The setting that fixes it (absent: none does)."
    )


class CancelledCall(WireModel):
    """A running tool call that was stopped (a switch to plan mode stops every call that
    changes the workspace)."""

    tool: str = Field(description="The tool's name.")
    callId: str = Field(description="The model's id of the call.")
    runId: str = Field(description="The run the call belonged to.")
