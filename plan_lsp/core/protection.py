"""The plan-mode shell protection in force, in the session's state and in words."""

from __future__ import annotations

from plan_lsp.config import Config
from plan_lsp.policy.sandbox.selftest import PROOF
from plan_lsp.policy.sandbox_probe import SandboxStatus


def effective_plan_shell(config: Config, status: SandboxStatus | None) -> str | None:
    """The plan-mode shell protection in force: the configured level, with "sandboxed" only
    where a sandbox proved itself (else "classified"); None while the self-test that
    decides it still runs."""
    configured = config.plan_shell
    if configured in ("off", "classified"):
        return configured
    if status is None:
        return None
    return "sandboxed" if status.mechanism else "classified"


def shell_protection_text(config: Config, status: SandboxStatus | None) -> str:
    """One line for humans: the level in force, what enforces it, and why a sandbox is not
    used when one was wanted (the self-test's own words)."""
    level = effective_plan_shell(config, status)
    if level == "off":
        return "off: no shell in plan mode"
    if config.plan_shell == "classified":
        return "classified: allow-list classifier only (set by the user)"
    if status is None:
        return "checking: the sandbox self-test is running; plan-mode commands wait for it"
    network = ", network allowed" if config.plan_network else ", no network"
    if level == "sandboxed":
        proven = f"; self-test: {PROOF}" if PROOF in status.detail else ""
        return f"sandboxed: {status.mechanism} (read-only{network}) + classifier{proven}"
    return f"classified: allow-list classifier only; no sandbox here ({status.detail})"
