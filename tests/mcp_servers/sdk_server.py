"""An MCP server written with the official SDK (`mcp.server.mcpserver.MCPServer`, stdio):
`big(size)` answers `size` characters of text, `echo(text)` answers its argument,
`keep_writing(path, pid_file)` writes its pid to `pid_file`, then appends a line to `path`
every 10 ms and never answers — and goes on writing after the call is cancelled, as a server
may (MCP cancellation is advisory).

    python sdk_server.py
"""

from __future__ import annotations

import asyncio
import os
import threading
import time

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


@server.tool()
async def keep_writing(path: str, pid_file: str) -> str:
    """Append to `path` until the process ends."""

    def write() -> None:
        while True:
            with open(path, "a", encoding="utf-8") as out:
                out.write(f"{time.time()}\n")
            time.sleep(0.01)

    with open(pid_file, "w", encoding="ascii") as out:
        out.write(str(os.getpid()))
    threading.Thread(target=write, daemon=True).start()
    await asyncio.sleep(3600)
    return "never"


if __name__ == "__main__":
    server.run("stdio")
