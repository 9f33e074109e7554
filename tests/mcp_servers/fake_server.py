"""A small MCP server (stdio, newline-delimited JSON-RPC, standard library only) whose tools
misbehave on purpose: crash mid-call, hang, lie in their annotations, change the tool list.

    python fake_server.py '<spec JSON>'      # or a path to a JSON file

spec = {"tools": [{"name", "action", "annotations"?, "description"?, "inputSchema"?}],
        "start": "ok" | "exit" | "hang" | "garbage",   # before answering initialize
        "stderr": "text written to stderr at start"}

Actions: echo, write (creates arguments.path in the cwd), crash, hang, error,
protocol_error, structured, image, big (arguments.size characters), env, add_tool
(adds arguments.name as an echo tool and sends notifications/tools/list_changed).
A hanging call does not stop the server reading: it exits when its stdin closes.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

_OUT = threading.Lock()


def send(message: dict[str, Any]) -> None:
    with _OUT:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def answer(rid: Any, result: dict[str, Any]) -> None:
    send({"jsonrpc": "2.0", "id": rid, "result": result})


def text(rid: Any, body: str, is_error: bool = False) -> None:
    answer(rid, {"content": [{"type": "text", "text": body}], "isError": is_error})


class Server:
    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.tools: list[dict[str, Any]] = list(spec.get("tools", []))

    def listing(self) -> list[dict[str, Any]]:
        out = []
        for tool in self.tools:
            entry = {
                "name": tool["name"],
                "description": tool.get("description", f"{tool['action']} tool"),
                "inputSchema": tool.get("inputSchema", {"type": "object"}),
            }
            if "annotations" in tool:
                entry["annotations"] = tool["annotations"]
            out.append(entry)
        return out

    def call(self, rid: Any, params: dict[str, Any]) -> None:
        name = params.get("name")
        args = params.get("arguments") or {}
        tool = next((t for t in self.tools if t["name"] == name), None)
        if tool is None:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "no tool"}})
            return
        action = tool["action"]
        if action == "echo":
            text(rid, json.dumps(args, sort_keys=True))
        elif action == "write":
            Path(args.get("path", "written.txt")).write_text("written by an MCP tool\n")
            text(rid, f"wrote {args.get('path', 'written.txt')}")
        elif action == "crash":
            sys.stderr.write("fake server: crashing on purpose\n")
            sys.stderr.flush()
            os._exit(3)
        elif action == "hang":
            Path("hang-started").write_text("")  # never answers; the main loop goes on
        elif action == "error":
            text(rid, "the tool failed: disk on fire", is_error=True)
        elif action == "protocol_error":
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32000, "message": "broken"}})
        elif action == "structured":
            answer(rid, {"content": [], "structuredContent": {"files": 2, "names": ["a", "b"]}})
        elif action == "image":
            answer(
                rid,
                {
                    "content": [
                        {"type": "text", "text": "a picture:"},
                        {"type": "image", "data": "AAAA" * 100, "mimeType": "image/png"},
                    ]
                },
            )
        elif action == "big":
            text(rid, "x" * int(args.get("size", 100_000)))
        elif action == "env":
            report = {"cwd": os.getcwd(), "env": dict(os.environ), "pid": os.getpid()}
            text(rid, json.dumps(report))
        elif action == "add_tool":
            self.tools.append({"name": args["name"], "action": "echo"})
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            text(rid, f"added {args['name']}")
        else:
            text(rid, f"unknown action {action}", is_error=True)

    def handle(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        rid = message.get("id")
        params = message.get("params") or {}
        if method == "initialize":
            start = self.spec.get("start", "ok")
            if start == "exit":
                sys.stderr.write("fake server: refusing to start\n")
                sys.stderr.flush()
                os._exit(2)
            if start == "hang":
                return
            if start == "garbage":
                sys.stdout.write("this is not JSON\n")
                sys.stdout.flush()
            answer(
                rid,
                {
                    "protocolVersion": params.get("protocolVersion", "2025-11-25"),
                    "capabilities": {"tools": {"listChanged": True}},
                    "serverInfo": {"name": "fake", "version": "1"},
                },
            )
        elif method == "tools/list":
            answer(rid, {"tools": self.listing()})
        elif method == "tools/call":
            self.call(rid, params)
        elif method == "ping":
            answer(rid, {})
        elif rid is not None:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "unknown"}})


def main() -> None:
    raw = sys.argv[1] if len(sys.argv) > 1 else "{}"
    spec = json.loads(raw if raw.lstrip().startswith("{") else Path(raw).read_text())
    if spec.get("stderr"):
        sys.stderr.write(spec["stderr"] + "\n")
        sys.stderr.flush()
    server = Server(spec)
    for line in sys.stdin:
        line = line.strip()
        if line:
            server.handle(json.loads(line))


if __name__ == "__main__":
    main()
