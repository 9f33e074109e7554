"""The sandbox's status as this process knows it: the self-test process's answer (else a probe
here), proved once and kept. Light on purpose: the server asks for it before its first
answer; the mechanisms load only when a probe runs here or a command is sandboxed."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from plan_lsp.policy.sandbox.status import SandboxStatus, current

log = logging.getLogger("plan_lsp.policy.sandbox")

_status_lock = threading.Lock()
_status: list[SandboxStatus] = []


def _from_process() -> SandboxStatus | None:
    """The self-test process's answer, waiting for it; None when there is none or it failed."""
    probe = current()
    answer = probe.answer() if probe is not None else None
    if answer is None:
        return None
    return SandboxStatus(
        answer["mechanism"], answer["detail"], answer["build_profile"], answer["probe_ms"]
    )


def sandbox_status() -> SandboxStatus:
    """The mechanism proven to work here, probed once per process; waits for the probe."""
    with _status_lock:
        if not _status:
            status = _from_process()
            if status is None:
                from plan_lsp.policy.sandbox.probe import probe_configured

                status = probe_configured()
            if status.mechanism is None:
                log.warning("shell sandbox: %s", status.detail)
            else:
                log.info("shell sandbox: %s", status.detail)
            _status.append(status)
        return _status[0]


def sandbox_status_nowait() -> SandboxStatus | None:
    """The status if known without waiting for the self-test process, else None."""
    probe = current()
    if not _status and probe is not None and not probe.done():
        return None
    return sandbox_status()


async def sandbox_ready() -> SandboxStatus:
    """The status, waited for off the event loop."""
    import asyncio  # loaded by the server anyway; not before the self-test has started

    status = sandbox_status_nowait()
    if status is not None:
        return status
    return await asyncio.to_thread(sandbox_status)


def on_sandbox_known(listener: Callable[[], None]) -> None:
    """`listener()` once the self-test process has answered (from its thread), or now."""
    probe = current()
    if probe is None:
        listener()
    else:
        probe.on_done(listener)
