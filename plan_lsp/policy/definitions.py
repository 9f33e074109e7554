"""Definition gate: which tool definitions the model sees, for a work mode and allow-list.

One table (`MODE_RULES`) plus a definition's `only_in`; the execution gate reads the same
rules (`mode_refusal`), so what the model is shown and what may run never disagree.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from plan_lsp.policy.safety import Safety, ToolDefinition
from plan_lsp.protocol.state import WorkMode

# planShell settings (config `planShell`): `off` never offers bash in plan mode.
PLAN_SHELL_OFF = "off"
PLAN_SHELL_CLASSIFIED: Final = "classified"
PLAN_SHELL_SANDBOXED: Final = "sandboxed"


@dataclass(frozen=True)
class ModeRule:
    """What one work mode lets through: the safety labels shown and run, whether per-call
    classified tools (bash) are offered, and why a tool is refused, in a user's words."""

    safeties: frozenset[Safety]
    classified_tools: bool
    refusal: str


MODE_RULES: dict[WorkMode, ModeRule] = {
    WorkMode.PLAN: ModeRule(
        safeties=frozenset({Safety.READ_ONLY, Safety.PLAN_FILE, Safety.CONTROL, Safety.SUBAGENT}),
        classified_tools=True,
        refusal=(
            "plan mode only allows read-only tools; the plan document is the one thing "
            "that may change (with plan_write). Approve the plan or switch to build mode "
            "to make changes"
        ),
    ),
    WorkMode.BUILD: ModeRule(
        safeties=frozenset({Safety.READ_ONLY, Safety.SIDE_EFFECT, Safety.CONTROL, Safety.SUBAGENT}),
        classified_tools=True,
        refusal="this tool belongs to plan mode and is not available in build mode",
    ),
}


def mode_refusal(definition: ToolDefinition, mode: WorkMode, plan_shell: str) -> str | None:
    """Why `definition` may not be shown or run in `mode` (bash: each call is still classified)."""
    rule = MODE_RULES[mode]
    name = definition.name
    if definition.only_in is not None and definition.only_in is not mode:
        return definition.elsewhere or f"{name} is not available in {mode.value} mode"
    if definition.classified_per_call:
        if not rule.classified_tools:
            return f"{name}: {rule.refusal}"
        if mode is WorkMode.PLAN and plan_shell == PLAN_SHELL_OFF:
            return (
                f'{name} is turned off in plan mode (setting planShell = "off"); '
                "use read_file, list_dir, glob and grep to research"
            )
        return None
    if definition.safety not in rule.safeties:
        return f"{name}: {rule.refusal}"
    return None


def name_refusal(definition: ToolDefinition, allow_names: frozenset[str] | None) -> str | None:
    """Why a skill/subagent name allow-list refuses `definition`; system tools always pass."""
    if allow_names is None or definition.system or definition.name in allow_names:
        return None
    return f"{definition.name} is not among the tools the active skill or subagent may use"


def definitions_for(
    definitions: Iterable[ToolDefinition],
    mode: WorkMode,
    allow_names: frozenset[str] | None,
    plan_shell: str,
) -> list[ToolDefinition]:
    """The definitions sent to the model: name allow-list first, then the mode table."""
    return [
        d
        for d in definitions
        if name_refusal(d, allow_names) is None and mode_refusal(d, mode, plan_shell) is None
    ]
