"""An MCP server written with the official SDK (`mcp.server.mcpserver.MCPServer`, stdio):
`big(size)` answers `size` characters of text, `echo(text)` answers its argument.

    python sdk_server.py
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("sdk-test")


@server.tool()
def big(size: int) -> str:
    """Answer `size` characters."""
    return "x" * size


@server.tool()
def echo(text: str) -> str:
    """Answer `text`."""
    return text


if __name__ == "__main__":
    server.run("stdio")
