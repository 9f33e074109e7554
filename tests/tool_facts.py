"""What the built-in tools' definitions say of themselves beyond name and safety label (the
argument a permission rule matches, whether a call edits files or only the agent's state,
the mode a control tool belongs to), for tests that build stand-in definitions by name."""

from __future__ import annotations

from typing import Any

from plan_lsp.agent.plan_tools import ENTER_PLAN_MODE, EXIT_PLAN_MODE, PLAN_WRITE
from plan_lsp.tools.registry import builtin_registry

_FACTS = ("primary_argument", "role", "only_in", "elsewhere")


def builtin_facts(name: str) -> dict[str, Any]:
    """The facts of the built-in tool `name` as ToolDefinition keyword arguments ({} for a
    name no built-in tool has)."""
    found = {d.name: d for d in builtin_registry().definitions()}
    found.update({d.name: d for d in (ENTER_PLAN_MODE, EXIT_PLAN_MODE, PLAN_WRITE)})
    definition = found.get(name)
    if definition is None:
        return {}
    return {key: getattr(definition, key) for key in _FACTS}
