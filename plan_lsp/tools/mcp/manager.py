"""All MCP servers of one workspace: lazy start, status, and the tools they add.

One `McpManager` per workspace; the agent calls `sync(registry)` before every model request
so the registry holds exactly the ready servers' tools, which run through `tools/runner.py`
like any other.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from plan_lsp.policy.safety import Safety
from plan_lsp.policy.sandbox import git_config_hazards, hardened_git_env
from plan_lsp.protocol.state import McpServerStatus
from plan_lsp.tools.base import Tool, ToolContext, ToolImpl, ToolResult
from plan_lsp.tools.bash import shell_env
from plan_lsp.tools.mcp.adapter import AdaptedTool, adapt_tools
from plan_lsp.tools.mcp.config import McpSettings
from plan_lsp.tools.mcp.connection import McpCallError, McpConnection, ServerStatus
from plan_lsp.tools.mcp.results import observation
from plan_lsp.tools.registry import ToolRegistry

log = logging.getLogger(__name__)

# How long a model request waits for a server that is restarting or re-listing its tools.
SETTLE_TIMEOUT_S = 30.0


def server_env(
    base: Mapping[str, str] | None = None, own: Mapping[str, str] | None = None
) -> dict[str, str]:
    """A server's environment: build-mode commands' (no model keys, no `PLAN_LSP_*`), its
    own `env`, then plan mode's git hardening in every mode (its git may read a hostile
    repository for a read-only tool). `PYTHONSAFEPATH=1` keeps the workspace off
    `sys.path` (a repository could ship a package of the server's name)."""
    env = shell_env(dict(os.environ if base is None else base))
    return hardened_git_env({**env, "PYTHONSAFEPATH": "1", **(own or {})})


class McpManager:
    def __init__(
        self,
        settings: McpSettings,
        workspace: Path,
        *,
        notify: Callable[[str], None] | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.settings = settings
        self.workspace = workspace
        self._notify_cb = notify
        self._listeners: list[Callable[[], None]] = []
        self._connections: dict[str, McpConnection] = {
            s.name: McpConnection(
                s,
                workspace,
                server_env(environ, s.env),
                on_change=self._changed,
                notify=self._notify,
            )
            for s in settings.servers
        }
        self._started = False
        self._adapted: dict[str, tuple[int, list[AdaptedTool]]] = {}
        self._registered: set[str] = set()
        self._warned: set[str] = set()

    # -- for the server layer ----------------------------------------------------------------

    def status(self) -> list[McpServerStatus]:
        """The entries of `planLsp/state.mcpServers`."""
        states = [
            McpServerStatus(
                name=c.name,
                status=c.status.value,
                error=c.error,
                tools=[a.definition.name for a in self._adapt(c)],
            )
            for c in self._connections.values()
        ]
        states.extend(
            McpServerStatus(
                name=p.name,
                status=ServerStatus.FAILED.value,
                error=f"invalid configuration: {p.error}",
            )
            for p in self.settings.invalid
        )
        return states

    def add_listener(self, listener: Callable[[], None]) -> None:
        """`listener()` runs after every status or tool-list change."""
        self._listeners.append(listener)

    async def close(self) -> None:
        """Stop every server (the process group is killed if it does not exit)."""
        await asyncio.gather(*(c.stop() for c in self._connections.values()))

    # -- for the agent -----------------------------------------------------------------------

    async def sync(self, registry: ToolRegistry) -> None:
        """Before a model request: start the servers the first time, wait for restarts and
        re-listings under way, and make `registry` hold the ready servers' tools."""
        if not self._started:
            self._started = True
            for problem in self.settings.invalid:
                self._notify(
                    f"MCP server '{problem.name}' is not started: invalid configuration: "
                    f"{problem.error}"
                )
            await asyncio.gather(*(c.start() for c in self._connections.values()))
        else:
            await asyncio.gather(*(c.settled(SETTLE_TIMEOUT_S) for c in self._connections.values()))
        self._apply(registry)

    def tools(self) -> list[Tool]:
        return [
            Tool(adapted.definition, self._runner(connection, adapted))
            for connection in self._connections.values()
            for adapted in self._adapt(connection)
        ]

    # -- internals -------------------------------------------------------------------------

    def _adapt(self, connection: McpConnection) -> list[AdaptedTool]:
        if connection.status is not ServerStatus.READY:
            return []
        cached = self._adapted.get(connection.name)
        if cached is not None and cached[0] == connection.generation:
            return cached[1]
        adapted, warnings = adapt_tools(connection.config, connection.tools)
        for warning in warnings:
            self._warn_once(warning)
        self._adapted[connection.name] = (connection.generation, adapted)
        return adapted

    def _apply(self, registry: ToolRegistry) -> None:
        wanted = {tool.name: tool for tool in self.tools()}
        for name in self._registered - wanted.keys():
            registry.unregister(name)
        registered: set[str] = set()
        for name, tool in wanted.items():
            if name in registry and name not in self._registered:
                self._warn_once(f"MCP tool {name} was not added: a tool with that name exists")
                continue
            registry.register(tool, replace=True)
            registered.add(name)
        self._registered = registered

    def _runner(self, connection: McpConnection, adapted: AdaptedTool) -> ToolImpl:
        qualified = adapted.definition.name

        async def run(arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
            if adapted.definition.safety == Safety.READ_ONLY:
                refusal = await self._git_refusal(qualified)
                if refusal is not None:
                    return refusal
            # The call's cancel signal (the user cancelled, or switched to plan mode while a
            # side-effect call runs) abandons the request; the server is told to stop it.
            call = asyncio.ensure_future(connection.call(adapted.mcp_name, arguments))
            stop = asyncio.ensure_future(ctx.cancel.wait())
            try:
                await asyncio.wait({call, stop}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                stop.cancel()
                killed = False
                if not call.done():
                    call.cancel()
                    # MCP cancellation is advisory: a server may go on with a call that
                    # changes the workspace. Its process group is killed before this call
                    # counts as ended (a switch to plan mode waits for that), and the server
                    # starts again for the next call.
                    if adapted.definition.safety is not Safety.READ_ONLY:
                        killed = connection.kill_now(f"a call of {qualified} was stopped")
                        if killed:
                            await asyncio.shield(connection.killed())
                    with contextlib.suppress(asyncio.CancelledError, McpCallError):
                        await call
            if call.cancelled():
                if killed:
                    ended = (
                        f"its server '{connection.name}' was killed, so the call cannot go on; "
                        "the server starts again for the next call"
                    )
                elif adapted.definition.safety is Safety.READ_ONLY:
                    ended = f"MCP server '{connection.name}' was asked to stop it"
                else:
                    ended = (
                        f"abandoned: MCP server '{connection.name}' was asked to stop it, and "
                        "may still be running it"
                    )
                return ToolResult.error("cancelled", f"{qualified} was cancelled; {ended}",
                                        tool=qualified)  # fmt: skip
            try:
                result = call.result()
            except McpCallError as exc:
                return ToolResult.error(exc.code, exc.message, tool=qualified)
            return observation(qualified, result)

        return run

    async def _git_refusal(self, qualified: str) -> ToolResult | None:
        """A read-only tool runs unasked, unconfined, and its server's git reads the
        workspace's repository: where that repository's setup is what the plan-mode shell
        refuses git for (a git directory or object store outside the workspace, a program
        the hardening cannot neutralise), it does not run."""
        hazards = await asyncio.to_thread(git_config_hazards, self.workspace)
        if not hazards:
            return None
        return ToolResult.error(
            "git_hazard",
            f"{qualified} was not run: it is run without asking because it is marked "
            f"read-only, and this workspace's git setup is unsafe to read: "
            f"{'; '.join(hazards)}",
            tool=qualified,
        )

    def _warn_once(self, message: str) -> None:
        if message not in self._warned:
            self._warned.add(message)
            self._notify(message)

    def _notify(self, message: str) -> None:
        log.warning("%s", message)
        if self._notify_cb is not None:
            try:
                self._notify_cb(message)
            except Exception:
                log.exception("MCP notice could not be delivered")

    def _changed(self) -> None:
        for listener in list(self._listeners):
            try:
                listener()
            except Exception:
                log.exception("MCP status listener failed")
