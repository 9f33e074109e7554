"""Tools from Model Context Protocol servers (stdio), under the same gates as built-ins.

`config` is light (pydantic only); the SDK is imported by `connection` when a server is
first started.
"""

from plan_lsp.tools.mcp.config import McpConfigProblem, McpServerConfig, McpSettings

__all__ = ["McpConfigProblem", "McpServerConfig", "McpSettings"]
