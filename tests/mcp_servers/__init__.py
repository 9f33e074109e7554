"""MCP servers for tests: `fake_server.py` (misbehaving on purpose), `sdk_server.py` (the
official SDK's server) and helpers to configure them or the real `mcp-server-git`."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

FAKE_SERVER = Path(__file__).with_name("fake_server.py")
SDK_SERVER = Path(__file__).with_name("sdk_server.py")


def sdk_command() -> list[str]:
    """argv that starts the official-SDK server (`big`, `echo`)."""
    return [sys.executable, str(SDK_SERVER)]


def fake_command(spec: dict[str, Any]) -> list[str]:
    """argv that starts the fake server with `spec`."""
    return [sys.executable, str(FAKE_SERVER), json.dumps(spec)]


def tool(name: str, action: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "action": action, **extra}


READ_ONLY_HINTS = {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False}


def git_server_command() -> list[str]:
    """The reference server from PyPI (`mcp-server-git`), on the workspace (cwd)."""
    return [sys.executable, "-m", "mcp_server_git", "--repository", "."]


async def hang_started(workspace: Path, timeout: float = 30) -> None:
    """Wait until a `hang` tool call has reached the fake server (it writes a marker in its
    working directory, the workspace)."""
    marker = workspace / "hang-started"
    async with asyncio.timeout(timeout):
        while not marker.exists():
            await asyncio.sleep(0.01)
