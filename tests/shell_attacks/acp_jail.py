"""Starts `plan-lsp acp` inside the attack jail with the supervisor's observers around it.

Started by `tests/redteam/test_acp_attacks.py` as
`python acp_jail.py JOB.json -- python -m plan_lsp acp …` inside the outer jail
(`harness.jail_argv`), as the jail's process 2. It forks an observer, which opens what the
supervisor opens (`supervisor.py`): the loopback listeners on the job's port, the host IPC
endpoints of the /srv-like tree and, for the IPC class, in the workspace. Once they are
open, process 2 becomes the agent (`exec`): its stdin and stdout are the jail's, so the ACP
client outside talks to it directly, and `/proc/2` is the agent's, as `{SERVER_PID}` says.

The observer never writes to stdout (the ACP channel). It answers on two FIFOs the test
made in the job's folder: for every line `sync` written to `ctl`, one JSON line on `ack`
with the connections, datagrams and IPC contacts seen since the previous line; `finish`
also takes the workspace's IPC endpoints away (giving the folder back its times) before
answering, so the test can compare the repository with the template. Standard library and
the attack harness's own modules only.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path

from ipc import Endpoints
from supervisor import _drain, _listeners


def _observe(job: dict[str, object], ready: int) -> int:
    """The observer: open everything, say so on `ready`, then answer `ctl` on `ack`."""
    os.dup2(2, 1)  # never a byte on the ACP channel
    try:
        listeners = _listeners(int(str(job["port"])))
        if not listeners:
            raise RuntimeError(f"could not listen on port {job['port']}")
        folders = [Path(str(f)) for f in job.get("ipc_folders", [])]  # type: ignore[attr-defined]
        endpoints = [Endpoints(folder) for folder in folders]
        local = [Endpoints(Path(str(job["local_ipc"])))] if job.get("local_ipc") else []
        ctl = os.open(str(job["ctl"]), os.O_RDWR)
        ack = os.open(str(job["ack"]), os.O_RDWR)
    except Exception:
        os.write(ready, ("fatal: " + traceback.format_exc()).encode())
        return 2
    os.write(ready, b"ok")
    os.close(ready)
    pending = b""
    while True:
        chunk = os.read(ctl, 4096)
        if not chunk:
            return 0
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            word = line.decode().strip()
            contacts = [got for e in (*endpoints, *local) for got in e.collect()]
            answer: dict[str, object] = {
                "connections": _drain(listeners),
                "ipc": contacts,
            }
            if word == "finish":
                for e in local:
                    e.remove()
                local = []
                answer["finished"] = True
            os.write(ack, (json.dumps(answer) + "\n").encode())


def main() -> int:
    split = sys.argv.index("--")
    job = json.loads(Path(sys.argv[1]).read_text())
    agent = sys.argv[split + 1 :]
    if job.get("expect_pid") and os.getpid() != job["expect_pid"]:
        print(f"acp_jail: pid {os.getpid()} != {job['expect_pid']}", file=sys.stderr)
        return 2
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read_end)
        os._exit(_observe(job, write_end))
    os.close(write_end)
    said = b""
    while chunk := os.read(read_end, 65536):
        said += chunk
    os.close(read_end)
    if said != b"ok":
        print(f"acp_jail: the observer did not start: {said.decode(errors='replace')}",
              file=sys.stderr)  # fmt: skip
        return 2
    os.execvp(agent[0], agent)
    return 2  # not reached


if __name__ == "__main__":
    sys.exit(main())
