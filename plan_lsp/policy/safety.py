"""The vocabulary both gates speak: a tool's safety label and its definition.

Lives in `policy/` (the lowest layer that decides) so that `tools/` can import it while
`policy/` never imports `tools/`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict


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
