"""One MCP server: its process, its client session (official SDK, stdio), its tools.

One owner task holds process and session (anyio scopes must be entered and left by one
task), restarts an exited server a few times, re-lists tools on `list_changed`. Nothing
blocks the event loop: even the SDK is first imported in a worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
import signal
import sys
from collections.abc import Callable, Mapping
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plan_lsp import __version__
from plan_lsp.tools.mcp.adapter import ListedTool
from plan_lsp.tools.mcp.config import McpServerConfig
from plan_lsp.tools.mcp.process_files import StderrTail, private_dir

if TYPE_CHECKING:
    from mcp.client.session import ClientSession, IncomingMessage

log = logging.getLogger(__name__)

# Restarts after unexpected exits in a row (a call that succeeds resets the count).
MAX_RESTARTS = 3
MAX_LIST_PAGES = 50
MAX_TOOLS = 500
# Stopping: the SDK closes stdin, waits, then kills the process group (about 4 s at most).
STOP_TIMEOUT_S = 10.0

_SDK_MODULES = ("mcp.client.session", "mcp.client.stdio", "mcp_types")
# Runs the server with each message it writes capped in bytes before the SDK reads it.
CAPPED_STDOUT = Path(__file__).with_name("capped_stdout.py")
TOO_LARGE = "message_too_large"  # `error.data.planLsp` of a capped answer


class ServerStatus(StrEnum):
    CONFIGURED = "configured"
    STARTING = "starting"
    READY = "ready"
    FAILED = "failed"


class McpCallError(Exception):
    """A call that did not produce a result; `code` is the observation's error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _count(value: object) -> str:
    return f"{value:,}" if isinstance(value, int) else "?"


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return str(message)


class McpConnection:
    """The client side of one configured server."""

    def __init__(
        self,
        config: McpServerConfig,
        workspace: Path,
        env: Mapping[str, str],
        *,
        on_change: Callable[[], None],
        notify: Callable[[str], None],
    ) -> None:
        self.config = config
        self.workspace = workspace
        self.env = dict(env)
        self.status = ServerStatus.CONFIGURED
        self.error: str | None = None
        self.tools: list[ListedTool] = []
        # Bumped whenever `tools` or `status` change, so readers know to rebuild.
        self.generation = 0
        self._on_change = on_change
        self._notify = notify
        self._session: ClientSession | None = None
        self._stderr: StderrTail | None = None
        self._owner: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._settled = asyncio.Event()
        self._settled.set()
        self._stopping = False
        self._lost = False
        self._relist = False
        self._restarts = 0
        # Where the relay writes its pid (its process group's id): `kill_now` stops the
        # server at once.
        self._pid_file = private_dir() / f"{id(self):x}.pid"
        # Set by `kill_now`: the next loss of the server is planned; it is started again.
        self._killed_because: str | None = None
        # Set each time a session with the server has ended (its process reaped).
        self._ended = asyncio.Event()

    @property
    def name(self) -> str:
        return self.config.name

    # -- life cycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the server unless it runs (a failed one is tried again); return once it is
        ready or has failed."""
        if self._owner is None or self._owner.done():
            self._restarts = 0
            self._stopping = False
            self._set_status(ServerStatus.STARTING, None)
            self._owner = asyncio.create_task(self._own(), name=f"mcp-server-{self.name}")
        await self.settled(self.config.startup_timeout_s + STOP_TIMEOUT_S)

    async def settled(self, timeout: float) -> bool:
        """Wait until no start, restart or re-listing is under way; False on timeout."""
        try:
            await asyncio.wait_for(self._settled.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def stop(self) -> None:
        owner = self._owner
        if owner is None or owner.done():
            return
        self._stopping = True
        self._wake.set()
        if self.status is not ServerStatus.READY:
            owner.cancel()  # still starting: nothing to wind down gracefully
        try:
            await asyncio.wait_for(asyncio.shield(owner), STOP_TIMEOUT_S)
        except TimeoutError:
            log.warning("MCP server %s did not stop in time; cancelling its task", self.name)
            owner.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await owner
        except asyncio.CancelledError:
            if not owner.done():
                raise
        except Exception:
            log.exception("MCP server %s failed while stopping", self.name)
        self._owner = None
        if self.status is not ServerStatus.FAILED:
            self._set_status(ServerStatus.CONFIGURED, None)
        self._settled.set()

    def kill_now(self, because: str) -> bool:
        """SIGKILL the server's process group (MCP cancellation is advisory: a stopped
        side-effect call must not go on after a switch to plan mode); it starts again for
        the next call. True when killed or not running."""
        try:
            group = int(self._pid_file.read_text(encoding="ascii"))
        except (OSError, ValueError):
            return self._session is None
        self._killed_because = because
        self._ended.clear()
        try:
            os.killpg(group, signal.SIGKILL)
        except ProcessLookupError:
            pass
        except OSError as exc:
            log.warning("MCP server %s: could not kill its process group: %s", self.name, exc)
            return False
        with contextlib.suppress(OSError):
            self._pid_file.unlink()
        # No call may reach the dead session: later calls wait for the restart.
        self._session = None
        self._settled.clear()
        return True

    async def killed(self, timeout: float = 10.0) -> None:
        """Until the session with the server killed by `kill_now` has ended."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._ended.wait(), timeout)

    # -- calls -----------------------------------------------------------------------------

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """`tools/call`; returns the result as wire JSON or raises McpCallError."""
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT
        from pydantic import ValidationError

        session = self._session
        if session is None and not self._settled.is_set():
            await self.settled(self.config.startup_timeout_s)
            session = self._session
        if session is None:
            why = f": {self.error}" if self.error else ""
            raise McpCallError(
                "mcp_server_unavailable",
                f"MCP server '{self.name}' is not running ({self.status.value}{why})",
            )
        timeout = self.config.timeout_s
        try:
            result = await session.call_tool(tool, arguments, read_timeout_seconds=timeout)
        except MCPError as exc:
            data = exc.data
            if isinstance(data, dict) and data.get("planLsp") == TOO_LARGE:
                size, limit = (_count(data.get(k)) for k in ("bytes", "limit"))
                raise McpCallError(
                    "mcp_result_too_large",
                    f"MCP server '{self.name}' answered {tool} with {size} bytes, more than "
                    f"the limit of {limit} bytes for one answer (max_message_bytes); the "
                    "answer was discarded before it was parsed",
                ) from None
            if exc.code == REQUEST_TIMEOUT:
                raise McpCallError(
                    "timeout",
                    f"MCP server '{self.name}' did not answer {tool} within {timeout:g} s "
                    "(timeout_s); the call was abandoned",
                ) from None
            # -32000 is also an ordinary server error code: only a closed pipe is an exit.
            if exc.code == CONNECTION_CLOSED and (self._lost or self._stopping):
                raise McpCallError(
                    "mcp_server_exited",
                    f"MCP server '{self.name}' exited during the call to {tool}"
                    f"{self._stderr_note()}; it is restarted for the next call",
                ) from None
            raise McpCallError(
                "mcp_error", f"MCP server '{self.name}' refused {tool}: {exc.message} ({exc.code})"
            ) from None
        except ValidationError as exc:
            raise McpCallError(
                "mcp_error", f"MCP server '{self.name}' sent an invalid answer to {tool}: {exc}"
            ) from None
        except RuntimeError as exc:  # e.g. structured content that breaks the output schema
            raise McpCallError("mcp_error", f"MCP server '{self.name}': {exc}") from None
        self._restarts = 0  # it works again: later exits may be restarted again
        dumped: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        return dumped

    # -- the owner task --------------------------------------------------------------------

    async def _own(self) -> None:
        try:
            # The SDK is imported off the event loop (it takes about a second).
            await asyncio.to_thread(lambda: [importlib.import_module(m) for m in _SDK_MODULES])
            while True:
                outcome = await self._one_session()
                if outcome != "lost" or self._stopping:
                    break
                if self._killed_because is not None:
                    because, self._killed_because = self._killed_because, None
                    self._notify(
                        f"MCP server '{self.name}' was stopped ({because}); starting it again"
                    )
                    continue
                if self._restarts >= MAX_RESTARTS:
                    self._fail(
                        f"exited unexpectedly {MAX_RESTARTS + 1} times"
                        f"{self._stderr_note()}; not restarted again (start it again to retry)"
                    )
                    break
                self._restarts += 1
                self._notify(
                    f"MCP server '{self.name}' exited unexpectedly{self._stderr_note()}; "
                    f"restarting it ({self._restarts} of {MAX_RESTARTS})"
                )
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # never let a server take the language server down
            log.exception("MCP server %s: client failed", self.name)
            self._fail(f"the MCP client failed: {_describe(exc)}")
        finally:
            self._session = None
            if self._stopping and self.status is not ServerStatus.FAILED:
                self._set_status(ServerStatus.CONFIGURED, None)
            self._settled.set()

    async def _one_session(self) -> str:
        """Run the server until it is stopped ("stopped"), exits ("lost") or cannot start
        ("failed")."""
        import anyio
        from mcp.client.session import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client
        from mcp_types import Implementation

        command = self.config.command
        # The server runs below the capping relay: no message over max_message_bytes
        # reaches the SDK, which reads a message whole (and slowly) before any limit.
        relay = ["-I", "-S", str(CAPPED_STDOUT), str(self.config.max_message_bytes),
                 "--pid-file", str(self._pid_file), "--"]  # fmt: skip
        params = StdioServerParameters(
            command=os.path.realpath(sys.executable),
            args=[*relay, *command],
            env=self.env,
            cwd=str(self.workspace),
        )
        self._lost = False
        self._relist = False
        self._stderr = stderr = StderrTail()
        try:
            async with stdio_client(params, errlog=stderr.writer) as (read, write):
                stderr.close_writer()
                send, receive = anyio.create_memory_object_stream[Any](0)
                async with anyio.create_task_group() as group:
                    try:
                        group.start_soon(self._pump, read, send)
                        async with ClientSession(
                            receive,
                            write,
                            message_handler=self._on_message,
                            client_info=Implementation(name="plan-lsp", version=__version__),
                        ) as session:
                            return await self._serve(session)
                    finally:
                        group.cancel_scope.cancel()
        except OSError as exc:
            return self._fail(f"could not run {command[0]!r}: {exc.strerror or exc}")
        except Exception as exc:
            return self._fail(f"{_describe(exc)}{self._stderr_note()}")
        finally:
            self._session = None
            self._ended.set()
            stderr.close()
        return "lost"  # pragma: no cover  (every path above returns)

    async def _serve(self, session: ClientSession) -> str:
        import anyio

        try:
            with anyio.fail_after(self.config.startup_timeout_s):
                await session.initialize()
                listed = await self._list(session)
        except TimeoutError:
            return self._fail(
                f"did not start within {self.config.startup_timeout_s:g} s "
                f"(startup_timeout_s){self._stderr_note()}"
            )
        except Exception as exc:
            if self._lost:
                return self._fail(f"exited while starting{self._stderr_note()}")
            return self._fail(f"could not be initialised: {_describe(exc)}{self._stderr_note()}")
        self._session = session
        self.tools = listed
        self._set_status(ServerStatus.READY, None)
        if not self._relist:  # a change announced while starting is listed first
            self._settled.set()
        while True:
            await self._wake.wait()
            self._wake.clear()
            if self._stopping:
                return "stopped"
            if self._lost:
                self._session = None
                self._set_status(ServerStatus.STARTING, None)
                return "lost"
            if self._relist:
                self._relist = False
                try:
                    with anyio.fail_after(self.config.startup_timeout_s):
                        listed = await self._list(session)
                except Exception as exc:
                    why = _describe(exc)
                    log.warning("MCP server %s: re-listing tools failed: %s", self.name, why)
                    self._notify(
                        f"MCP server '{self.name}' changed its tools but could not list them: "
                        f"{why}; the previous list stays"
                    )
                else:
                    self.tools = listed
                    self._changed()
                if not self._relist:
                    self._settled.set()

    async def _list(self, session: ClientSession) -> list[ListedTool]:
        from mcp_types import PaginatedRequestParams

        capabilities = session.server_capabilities
        if capabilities is not None and capabilities.tools is None:
            return []
        tools: list[Any] = []
        cursor: str | None = None
        for _page in range(MAX_LIST_PAGES):
            params = PaginatedRequestParams(cursor=cursor) if cursor else None
            result = await session.list_tools(params=params)
            tools.extend(result.tools)
            cursor = result.next_cursor
            if not cursor or len(tools) >= MAX_TOOLS:
                break
        if len(tools) > MAX_TOOLS:
            self._notify(
                f"MCP server '{self.name}' lists {len(tools)} tools; only the first "
                f"{MAX_TOOLS} are offered"
            )
        return [
            ListedTool(
                name=t.name,
                description=t.description or "",
                input_schema=dict(t.input_schema),
                annotations=(
                    t.annotations.model_dump(by_alias=True, exclude_none=True)
                    if t.annotations is not None
                    else None
                ),
            )
            for t in tools[:MAX_TOOLS]
        ]

    async def _pump(self, source: Any, sink: Any) -> None:
        """Forward the transport's messages to the session, and notice when they end."""
        import anyio

        try:
            async with sink:
                async for item in source:
                    await sink.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            pass
        finally:
            if not self._stopping:
                self._lost = True
                self._settled.clear()  # a restart follows; callers wait for it
                self._wake.set()

    async def _on_message(self, message: IncomingMessage) -> None:
        from mcp_types import ToolListChangedNotification

        if isinstance(message, ToolListChangedNotification):
            self._relist = True
            self._settled.clear()
            self._wake.set()
        elif isinstance(message, Exception):
            log.warning("MCP server %s sent something unreadable: %s", self.name, message)

    # -- status ----------------------------------------------------------------------------

    def _stderr_note(self) -> str:
        text = self._stderr.text() if self._stderr is not None else ""
        return f" (stderr: {text[-500:]})" if text else ""

    def _fail(self, reason: str) -> str:
        self._session = None
        self._set_status(ServerStatus.FAILED, reason)
        self._notify(f"MCP server '{self.name}' failed: {reason}. Its tools are not available.")
        self._settled.set()
        return "failed"

    def _set_status(self, status: ServerStatus, error: str | None) -> None:
        if status is ServerStatus.STARTING:
            self._settled.clear()
        if status is not ServerStatus.READY:
            self.tools = []
        self.status = status
        self.error = error
        self._changed()

    def _changed(self) -> None:
        self.generation += 1
        self._on_change()  # the manager's, which keeps a failing listener to itself
