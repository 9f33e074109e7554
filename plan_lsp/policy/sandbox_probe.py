"""The sandbox's status, known without waiting: the names the server and the session core
use. `plan-lsp serve` calls `start()` first thing, so the self-test runs on another core while
the server starts; code on the event loop asks `sandbox_status_nowait()` (None while the
self-test runs) or awaits `sandbox_ready()`.
"""

from __future__ import annotations

from plan_lsp.policy.sandbox.known import on_sandbox_known as on_sandbox_known
from plan_lsp.policy.sandbox.known import sandbox_ready as sandbox_ready
from plan_lsp.policy.sandbox.known import sandbox_status as sandbox_status
from plan_lsp.policy.sandbox.known import sandbox_status_nowait as sandbox_status_nowait
from plan_lsp.policy.sandbox.status import PROBE_MODULE as PROBE_MODULE
from plan_lsp.policy.sandbox.status import SandboxStatus as SandboxStatus
from plan_lsp.policy.sandbox.status import parse_answer as parse_answer
from plan_lsp.policy.sandbox.status import start as start
