"""The tool registry: definitions with their safety labels, and their implementations.

Built-in tools and MCP tools join the same registry; the gates only ever read the
definition, so a new tool needs no change to them.
"""

from __future__ import annotations

from plan_lsp.policy.safety import ToolDefinition
from plan_lsp.tools.ask_user import ASK_USER_TOOL
from plan_lsp.tools.base import Tool
from plan_lsp.tools.bash import BASH_TOOL
from plan_lsp.tools.edit import EDIT_TOOLS
from plan_lsp.tools.fs import FS_TOOLS
from plan_lsp.tools.todo import TODO_WRITE_TOOL


class ToolRegistry:
    def __init__(self, tools: tuple[Tool, ...] | list[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool, *, replace: bool = False) -> None:
        if tool.name in self._tools and not replace:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    def unregister(self, name: str) -> None:
        self._tools.pop(name, None)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def definitions(self) -> list[ToolDefinition]:
        return [t.definition for t in self._tools.values()]

    def names(self) -> list[str]:
        return list(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)


def builtin_registry() -> ToolRegistry:
    """The file, shell, todo and question tools."""
    return ToolRegistry([*FS_TOOLS, *EDIT_TOOLS, TODO_WRITE_TOOL, ASK_USER_TOOL, BASH_TOOL])
