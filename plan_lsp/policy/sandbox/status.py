"""What the sandbox self-test found, and the process that finds it: `probe_main`, run from
`/` in a process of its own (a thread held the interpreter lock, delaying the first answer).
This module imports nothing else of the package.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Literal

log = logging.getLogger("plan_lsp.policy.sandbox")

BUBBLEWRAP: Literal["bubblewrap"] = "bubblewrap"
LANDLOCK: Literal["landlock"] = "landlock"
Mechanism = Literal["bubblewrap", "landlock"]
# Orders or restricts the mechanisms tried, e.g. `landlock` or `none` (server environment).
ORDER_VARIABLE = "PLAN_LSP_SANDBOX"

PROBE_MODULE = "plan_lsp.policy.sandbox.probe_main"
# The self-test bounds each of its sandboxed shells; this bounds the whole process.
PROCESS_TIMEOUT_S = 60.0
PROBE_NICENESS = 10


@dataclass(frozen=True)
class SandboxStatus:
    mechanism: Mechanism | None
    detail: str
    # Build-mode commands run with `.plan-lsp` read-only (bubblewrap only).
    build_profile: bool = False
    probe_ms: float = 0.0


class BackgroundProbe:
    """One self-test process and its answer: a `SandboxStatus`'s fields, None if it failed."""

    def __init__(self) -> None:
        self._answer: Future[dict[str, Any] | None] = Future()

    def start(self) -> None:
        isolation = "-I" if sys.flags.isolated else "-P"
        try:
            process = subprocess.Popen(
                [sys.executable, isolation, "-m", PROBE_MODULE],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd="/",
            )
        except OSError as exc:
            log.warning("sandbox self-test process could not start: %s", exc)
            self._answer.set_result(None)
            return
        # Background work: where cores are scarce, the server's own start-up goes first.
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, process.pid, PROBE_NICENESS)
        threading.Thread(
            target=self._wait, args=(process,), name="sandbox-probe", daemon=True
        ).start()

    def _wait(self, process: subprocess.Popen[bytes]) -> None:
        try:
            out, err = process.communicate(timeout=PROCESS_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            log.warning("sandbox self-test process did not answer in %.0f s", PROCESS_TIMEOUT_S)
            self._answer.set_result(None)
            return
        self._answer.set_result(parse_answer(out, err, process.returncode))

    def done(self) -> bool:
        return self._answer.done()

    def answer(self) -> dict[str, Any] | None:
        """Waits for the process (it is bounded by `PROCESS_TIMEOUT_S`)."""
        return self._answer.result()

    def on_done(self, listener: Callable[[], None]) -> None:
        """`listener()` once the answer is in (from the waiting thread), or now if it is."""
        self._answer.add_done_callback(lambda _: listener())


def parse_answer(out: bytes, err: bytes, returncode: int) -> dict[str, Any] | None:
    """The process's one JSON line, checked for a status's fields; None (logged) else."""
    try:
        answer = json.loads(out.decode("utf-8").strip().splitlines()[-1])
    except (UnicodeDecodeError, IndexError, ValueError):
        answer = None
    fields: dict[str, type | tuple[type, ...]] = {
        "mechanism": (str, type(None)), "detail": str, "build_profile": bool,
        "probe_ms": (int, float),
    }  # fmt: skip
    if (
        returncode == 0
        and isinstance(answer, dict)
        and all(isinstance(answer.get(k), t) for k, t in fields.items())
        and answer["mechanism"] in (None, BUBBLEWRAP, LANDLOCK)
    ):
        return answer
    reason = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit {returncode}"]
    log.warning("sandbox self-test process failed (%s); probing in the server", reason[0][:300])
    return None


_current: list[BackgroundProbe] = []


def start() -> None:
    """Start the self-test process (once per server process)."""
    if _current:
        return
    probe = BackgroundProbe()
    _current.append(probe)
    probe.start()


def current() -> BackgroundProbe | None:
    return _current[0] if _current else None
