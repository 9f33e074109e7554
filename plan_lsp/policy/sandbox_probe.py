"""The sandbox's status, known without waiting: the names the server and the session core
use (`policy/sandbox/status.py` starts the self-test process, `policy/sandbox/known.py`
holds the status it proves, or probes in this process where none was started or it failed).

`plan-lsp serve` calls `start()` first thing, so the self-test runs on another core while
the server starts. Code on the event loop asks `sandbox_status_nowait()` (None while the
self-test runs) or awaits `sandbox_ready()`.
"""

from __future__ import annotations

from plan_lsp.policy.sandbox.known import (
    on_sandbox_known,
    sandbox_ready,
    sandbox_status,
    sandbox_status_nowait,
)
from plan_lsp.policy.sandbox.status import (
    BUBBLEWRAP,
    LANDLOCK,
    ORDER_VARIABLE,
    PROBE_MODULE,
    BackgroundProbe,
    Mechanism,
    SandboxStatus,
    current,
    parse_answer,
    start,
)

__all__ = [
    "BUBBLEWRAP",
    "LANDLOCK",
    "ORDER_VARIABLE",
    "PROBE_MODULE",
    "BackgroundProbe",
    "Mechanism",
    "SandboxStatus",
    "current",
    "on_sandbox_known",
    "parse_answer",
    "sandbox_ready",
    "sandbox_status",
    "sandbox_status_nowait",
    "start",
]
