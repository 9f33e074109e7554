"""Runs attack commands through the real `bash` tool path, inside the outer jail.

Started by `test_shell_attacks.py` as `python supervisor.py JOB.json` inside a jail whose
network namespace it shares with nobody: it opens the loopback listeners itself (TCP and
UDP, IPv4 and IPv6, on the job's port), then runs each attack with `run_shell` (sandboxed
or not, as the job says) in its own fresh copy of the scratch repository, sequentially so
every connection, every change of a watched
directory and every leaked secret is attributed to the attack that caused it. One JSON
line per attack on stdout; the test compares the repositories itself, from outside.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import sys
import time
from pathlib import Path
from typing import Any

from ipc import Endpoints
from snapshot import differences, snapshot

from plan_lsp.policy.sandbox import sandbox_status
from plan_lsp.tools.bash import run_shell


def _listeners(port: int) -> list[socket.socket]:
    found = []
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
            sock = socket.socket(family, kind)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((host, port))
            except OSError:
                sock.close()
                continue
            if kind == socket.SOCK_STREAM:
                sock.listen(64)
            sock.setblocking(False)
            found.append(sock)
    return found


def _drain(listeners: list[socket.socket]) -> int:
    """Connections accepted and datagrams received since the last call."""
    seen = 0
    for sock in listeners:
        while True:
            try:
                if sock.type == socket.SOCK_STREAM:
                    conn, _ = sock.accept()
                    conn.close()
                else:
                    sock.recvfrom(65536)
            except (BlockingIOError, OSError):
                break
            seen += 1
    return seen


def _watch(paths: list[Path]) -> dict[str, Any]:
    return {str(p): snapshot(p, dir_times=False) for p in paths}


async def main(job_path: str) -> int:
    job = json.loads(Path(job_path).read_text())
    if job.get("expect_pid") and os.getpid() != job["expect_pid"]:
        print(json.dumps({"fatal": f"supervisor pid {os.getpid()} != {job['expect_pid']}"}))
        return 2
    if job["sandboxed"]:
        status = sandbox_status()
        if status.mechanism != job["mechanism"]:
            print(json.dumps({"fatal": f"wanted {job['mechanism']}: {status.detail}"}))
            return 2
    listeners = _listeners(job["port"])
    if not listeners:
        print(json.dumps({"fatal": f"could not listen on port {job['port']}"}))
        return 2
    watched = [Path(p) for p in job["watch"]]
    before = _watch(watched)
    token = job["token"]
    template = Path(job["template"])
    # Host IPC endpoints outside the workspace (a read-only tree), for the whole run.
    fixed = [Endpoints(Path(folder)) for folder in job.get("ipc_folders", [])]
    for attack in job["attacks"]:
        # A fresh copy of the scratch repository for every attack, made here so copies run
        # in parallel with the other jails; the test compares each with the template. An
        # attack on a home opened as the workspace runs there, with HOME naming it.
        home = attack.get("home")
        if home is None:
            shutil.copytree(template, attack["cwd"], symlinks=True)
        jail_home = os.environ["HOME"]
        os.environ["HOME"] = home or jail_home
        # And inside the workspace, made for this attack, taken away before it is compared.
        local = [Endpoints(Path(attack["cwd"]))] if attack.get("ipc") else []
        started = time.monotonic()
        result = await run_shell(
            attack["command"],
            Path(attack["cwd"]),
            job["timeout"],
            job["sandboxed"],
            None,
            profile="plan",
            roots=[Path(attack["cwd"])],
            network=False,
        )
        os.environ["HOME"] = jail_home
        ipc = [got for endpoints in (*fixed, *local) for got in endpoints.collect()]
        for endpoints in local:
            endpoints.remove()
        data = result.data or {}
        output = f"{data.get('stdout', '')}\n{data.get('stderr', '')}\n{result.content}"
        after = _watch(watched)
        changes = [
            f"{path}: {change}"
            for path in before
            for change in differences(before[path], after[path])
        ]
        before = after
        line = {
            "id": attack["id"],
            "ms": round((time.monotonic() - started) * 1000),
            "exit": data.get("exit_code"),
            "error": data.get("error"),
            "connections": _drain(listeners),
            "ipc": ipc,
            "leaked": token in output,
            "changes": changes,
            "stdout": str(data.get("stdout", ""))[:300],
            "stderr": str(data.get("stderr", ""))[:300],
        }
        print(json.dumps(line), flush=True)
    for sock in listeners:
        sock.close()
    for endpoints in fixed:
        endpoints.remove()
    print(json.dumps({"done": True}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1])))
