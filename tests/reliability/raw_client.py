"""A raw JSON-RPC client over the server's stdio pipes: it writes exact bytes (so a test can
send broken framing), reads framed messages back, and answers the server's own requests
the way a passive editor would."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

SERVE_CMD = [sys.executable, "-m", "plan_lsp", "serve"]
STDERR_TAIL_BYTES = 512 * 1024

# What a passive editor answers to each server→client request.
_CLIENT_ANSWERS: dict[str, Any] = {
    "window/showDocument": {"success": False},
    "workspace/applyEdit": {"applied": False, "failureReason": "raw test client"},
    "planLsp/requestPermission": {"optionId": "reject_once"},
}


class NoResponse(AssertionError):
    """A request the server never answered."""


def frame(body: bytes | dict[str, Any]) -> bytes:
    """One well-formed LSP frame."""
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return b"Content-Length: %d\r\n\r\n" % len(raw) + raw


def id_key(msg_id: Any) -> str:
    """Responses are matched by the JSON form of the id (1 and "1" are different ids)."""
    return json.dumps(msg_id)


class RawServer:
    def __init__(self, proc: asyncio.subprocess.Process, log_path: Path) -> None:
        self.proc = proc
        self.log_path = log_path
        # The server logs untrusted input verbatim (megabytes per fuzzed message): keep only
        # the tail of its stderr, written to `log_path` on close.
        self.stderr_tail = bytearray()
        self.stderr_bytes = 0
        self._stderr = asyncio.ensure_future(self._drain_stderr())
        self.responses: dict[str, dict[str, Any]] = {}
        self.notifications: list[dict[str, Any]] = []
        self.server_requests: list[dict[str, Any]] = []
        self.unframed: list[bytes] = []
        self._arrived = asyncio.Event()
        self._ids = itertools.count(1)
        self._reader = asyncio.ensure_future(self._read_loop())

    @classmethod
    async def start(
        cls, workspace: Path, *extra_args: str, log_path: Path, init: bool = True
    ) -> RawServer:
        proc = await asyncio.create_subprocess_exec(
            *SERVE_CMD,
            "--workspace",
            str(workspace),
            *extra_args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=64 * 1024 * 1024,
        )
        server = cls(proc, log_path)
        if init:
            await server.initialize(workspace)
        return server

    # -- process --------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        return self.proc.returncode is None

    async def close(self) -> None:
        if self.alive:
            with contextlib.suppress(Exception):
                await self.request("shutdown", None, timeout=10)
                await self.send(frame({"jsonrpc": "2.0", "method": "exit"}))
            try:
                await asyncio.wait_for(self.proc.wait(), 10)
            except TimeoutError:
                self.kill()
                await self.proc.wait()
        for task in (self._reader, self._stderr):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        with self.log_path.open("ab") as log:
            log.write(bytes(self.stderr_tail))

    async def _drain_stderr(self) -> None:
        stderr = self.proc.stderr
        assert stderr is not None
        while chunk := await stderr.read(65536):
            self.stderr_bytes += len(chunk)
            self.stderr_tail += chunk
            if len(self.stderr_tail) > STDERR_TAIL_BYTES:
                del self.stderr_tail[: len(self.stderr_tail) - STDERR_TAIL_BYTES]

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGKILL)

    # -- writing --------------------------------------------------------------------------

    async def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    def next_id(self) -> int:
        return next(self._ids)

    async def request(self, method: str, params: Any = None, timeout: float = 30) -> dict[str, Any]:
        """Send a well-formed request; the whole response message comes back."""
        msg_id = self.next_id()
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            msg["params"] = params
        await self.send(frame(msg))
        got = await self.wait_for([id_key(msg_id)], timeout)
        if id_key(msg_id) not in got:
            raise NoResponse(f"no response to {method} (id {msg_id}) within {timeout} s")
        return got[id_key(msg_id)]

    async def notify(self, method: str, params: Any) -> None:
        await self.send(frame({"jsonrpc": "2.0", "method": method, "params": params}))

    async def wait_for(self, keys: list[str], timeout: float) -> dict[str, dict[str, Any]]:
        """Wait until a response for every id key arrived (or the process died)."""

        async def _wait() -> None:
            while not all(k in self.responses for k in keys):
                if self._reader.done():
                    return
                self._arrived.clear()
                await self._arrived.wait()

        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(_wait(), timeout)
        return {k: self.responses[k] for k in keys if k in self.responses}

    # -- reading --------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        try:
            while True:
                length = None
                while True:
                    line = await stdout.readline()
                    if not line:
                        return
                    if line == b"\r\n":
                        break
                    name, _, value = line.decode("ascii", "replace").partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value.strip())
                    elif not line.strip():
                        continue
                if length is None:
                    self.unframed.append(line)
                    continue
                body = await stdout.readexactly(length)
                await self._dispatch(json.loads(body))
        finally:
            self._arrived.set()

    async def _dispatch(self, msg: dict[str, Any]) -> None:
        if "method" in msg and "id" in msg:
            self.server_requests.append(msg)
            answer = _CLIENT_ANSWERS.get(msg["method"])
            await self.send(frame({"jsonrpc": "2.0", "id": msg["id"], "result": answer}))
        elif "method" in msg:
            self.notifications.append(msg)
        else:
            self.responses[id_key(msg.get("id"))] = msg
        self._arrived.set()

    async def initialize(self, workspace: Path, capabilities: dict[str, Any] | None = None) -> Any:
        caps = capabilities or {
            "workspace": {"applyEdit": True, "workspaceEdit": {"documentChanges": True}},
            "window": {"showDocument": {"support": True}},
        }
        params = {
            "processId": os.getpid(),
            "rootUri": workspace.resolve().as_uri(),
            "workspaceFolders": [{"uri": workspace.resolve().as_uri(), "name": workspace.name}],
            "capabilities": caps,
        }
        response = await self.request("initialize", params, timeout=60)
        assert "result" in response, response
        await self.notify("initialized", {})
        return response["result"]
