"""The vocabulary both gates speak: a tool's safety label and its definition, everything known
about a tool but its code (no table elsewhere is keyed by tool name).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from plan_lsp.policy.arguments import model_error, model_schema, schema_error
from plan_lsp.protocol.state import WorkMode


class Safety(StrEnum):
    READ_ONLY = "read_only"
    SIDE_EFFECT = "side_effect"
    PLAN_FILE = "plan_file"  # writes only the plan document (plan_write); plan mode only
    CONTROL = "control"  # changes the session's mode; checked per tool
    SUBAGENT = "subagent"  # runs a subagent; the child inherits the parent's restrictions


# For the permission mode's defaults: "edit" changes files' text, "agent" only the agent's
# own state (never prompts); None: judged by the safety label.
CallRole = Literal["edit", "agent"]


class PrimaryArgument(BaseModel):
    """The argument a permission rule's pattern is matched against, and how."""

    model_config = ConfigDict(frozen=True)

    name: str
    kind: Literal["command", "path"]


class ArgumentsRefused(ValueError):
    """The model's arguments do not fit the tool; the message names the field."""


class ToolDefinition(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    safety: Safety
    arguments: type[BaseModel] | None = None  # our tools: the schema is derived from it
    input_schema: dict[str, Any] = Field(default_factory=dict)  # MCP tools: as their server gave
    system: bool = False  # passes a skill/subagent name allow-list, never the safety filter
    timeout_s: float = 120.0
    classified_per_call: bool = False  # `bash`: the shell classifier decides per call
    primary_argument: PrimaryArgument | None = None  # what rules match: `bash(git log *)`
    role: CallRole | None = None
    # A control tool that belongs to one work mode only, and why it is refused in the other.
    only_in: WorkMode | None = None
    elsewhere: str = ""

    @model_validator(mode="before")
    @classmethod
    def _schema_from_model(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("arguments") is not None:
            if data.get("input_schema"):
                raise ValueError(
                    f"tool {data.get('name')!r}: give an argument model or a schema, not both"
                )
            data = {**data, "input_schema": model_schema(data["arguments"])}
        return data

    def check_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The arguments as the tool receives them (for our tools: parsed by the argument
        model, fields the model did not send left out); `ArgumentsRefused` names the field
        that does not fit."""
        if self.arguments is None:
            error = schema_error(arguments, self.input_schema)
            if error is not None:
                raise ArgumentsRefused(error)
            return arguments
        try:
            parsed = self.arguments.model_validate(arguments)
        except ValidationError as exc:
            raise ArgumentsRefused(model_error(exc, self.input_schema)) from None
        return parsed.model_dump(exclude_unset=True)
