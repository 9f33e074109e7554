"""The OS sandbox for shell commands: the wall behind the shell classifier.

`sandbox_status()` proves at start-up which mechanism really holds here (bubblewrap, else
Landlock, else none) with a probe (`selftest`), and says why in `detail`. `sandbox_argv()`
wraps a command for a profile: `plan` (read-only, no network, homes and secrets hidden,
scrubbed environment, rlimits) or `build` (writable as the user, except every
`<root>/.plan-lsp`). docs/security.md describes what each guarantees and what it does not.

`PLAN_LSP_SANDBOX` (server environment) orders or restricts the mechanisms tried, e.g.
`landlock` or `none`; tests use it to force the fallback.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from plan_lsp.policy.sandbox.bwrap import (
    build_argv,
    bwrap_path,
    memory_limited,
    missing_features,
    plan_argv,
)
from plan_lsp.policy.sandbox.git import (
    git_shim,
    git_shim_dir,
    hardened_git_env,
    unsandboxed_plan_env,
)
from plan_lsp.policy.sandbox.git_hazards import git_config_hazards
from plan_lsp.policy.sandbox.landlock import landlock_abi, landlock_argv, seccomp_available
from plan_lsp.policy.sandbox.layout import plan_environment
from plan_lsp.policy.sandbox.selftest import ProbeResult, probe_build, probe_plan, timed
from plan_lsp.policy.sandbox_probe import (
    BUBBLEWRAP,
    LANDLOCK,
    ORDER_VARIABLE,
    Mechanism,
    SandboxStatus,
    on_sandbox_known,
    sandbox_ready,
    sandbox_status,
    sandbox_status_nowait,
)

__all__ = [
    "BUBBLEWRAP",
    "LANDLOCK",
    "Mechanism",
    "Profile",
    "SandboxStatus",
    "SandboxUnavailable",
    "git_config_hazards",
    "git_shim",
    "git_shim_dir",
    "hardened_git_env",
    "memory_limited",
    "on_sandbox_known",
    "plan_environment",
    "probe_configured",
    "probe_sandbox",
    "reaped_argv",
    "sandbox_argv",
    "sandbox_kind",
    "sandbox_ready",
    "sandbox_status",
    "sandbox_status_nowait",
    "unsandboxed_plan_env",
]

log = logging.getLogger(__name__)

Profile = Literal["plan", "build"]
MECHANISMS: tuple[Mechanism, ...] = (BUBBLEWRAP, LANDLOCK)
SUBREAPER = Path(__file__).with_name("subreaper.py")


class SandboxUnavailable(RuntimeError):
    """A sandboxed run was asked for where no mechanism (or not this profile) works."""


def _order(value: str | None) -> list[Mechanism]:
    if value is None or not value.strip():
        return list(MECHANISMS)
    names = [part.strip().lower() for part in value.split(",")]
    return [m for m in MECHANISMS if m in names]


def _unavailable(mechanism: Mechanism) -> str | None:
    """Why `mechanism` cannot even be tried here, or None."""
    if mechanism == BUBBLEWRAP:
        return None if bwrap_path() else "bwrap is not installed"
    if landlock_abi() < 1:
        return "the kernel has no Landlock"
    if not seccomp_available():
        return "no seccomp filter for this architecture (Landlock alone lets chmod through)"
    return None


def _probe(mechanism: Mechanism) -> tuple[ProbeResult, float]:
    def build(workdir: Path, argv: Sequence[str], scratch: Path) -> list[str]:
        return sandbox_argv(workdir, list(argv), mechanism=mechanism, scratch=scratch)

    return timed(lambda: probe_plan(build))


def _probe_build() -> tuple[ProbeResult, float]:
    def build(workdir: Path, argv: Sequence[str]) -> list[str]:
        return sandbox_argv(workdir, list(argv), mechanism=BUBBLEWRAP, profile="build")

    return timed(lambda: probe_build(build))


def probe_sandbox(mechanisms: Sequence[Mechanism] = MECHANISMS) -> SandboxStatus:
    """Try `mechanisms` in order; the first whose probe holds is the status (uncached)."""
    reasons: list[str] = []
    total_ms = 0.0
    for mechanism in mechanisms:
        missing = _unavailable(mechanism)
        if missing is not None:
            reasons.append(f"{mechanism}: {missing}")
            continue
        result, ms = _probe(mechanism)
        total_ms += ms
        if not result.ok:
            reasons.append(f"{mechanism}: {result.why}")
            continue
        build_ok, build_ms = False, 0.0
        if mechanism == BUBBLEWRAP:
            build_result, build_ms = _probe_build()
            build_ok = build_result.ok
            lacking = missing_features()
            if lacking:
                result = ProbeResult(True, f"{result.why}; this bwrap lacks {', '.join(lacking)}")
            build_note = (
                "build-mode commands run with .plan-lsp read-only"
                if build_ok
                else f"build profile unavailable ({build_result.why}); the permission "
                "prompt guards build-mode commands"
            )
        else:
            abi = landlock_abi()
            build_note = (
                f"ABI {abi}; build-mode commands run unsandboxed (Landlock cannot make only "
                ".plan-lsp read-only); the permission prompt guards them"
            )
        total_ms += build_ms
        skipped = f" (not used: {'; '.join(reasons)})" if reasons else ""
        detail = f"{mechanism}: {result.why} ({ms:.0f} ms); {build_note}{skipped}"
        return SandboxStatus(mechanism, detail, build_ok, total_ms)
    if not reasons:
        reasons.append(f"no mechanism enabled by {ORDER_VARIABLE}")
    detail = (
        "no working sandbox: " + "; ".join(reasons) + ". Plan-mode commands rely on the "
        "classifier alone; build-mode commands on the permission prompt"
    )
    return SandboxStatus(None, detail, False, total_ms)


def probe_configured() -> SandboxStatus:
    """Probe the mechanisms `PLAN_LSP_SANDBOX` allows, in order (uncached)."""
    return probe_sandbox(_order(os.environ.get(ORDER_VARIABLE)))


def sandbox_kind() -> str | None:
    """The working mechanism's name, or None (kept for callers of the first version)."""
    return sandbox_status().mechanism


def sandbox_argv(
    workdir: Path,
    argv: list[str],
    *,
    roots: Sequence[Path] = (),
    network: bool = False,
    profile: Profile = "plan",
    mechanism: Mechanism | None = None,
    scratch: Path | None = None,
    base_env: Mapping[str, str] | None = None,
) -> list[str]:
    """`argv` wrapped to run in `workdir` under `profile`.

    `mechanism` defaults to the proven one. `scratch` is the one writable directory under
    Landlock (bubblewrap gives a private tmpfs instead). `base_env` is the environment the
    allow-list is taken from (default: the server's). The build profile exists only with
    bubblewrap; the caller passes the command's environment to the process."""
    if mechanism is None:
        mechanism = sandbox_status().mechanism
    if mechanism is None:
        raise SandboxUnavailable("no working sandbox on this machine")
    roots = list(roots) or [Path(workdir)]
    if profile == "build":
        if mechanism != BUBBLEWRAP:
            raise SandboxUnavailable(f"the build profile needs bubblewrap, not {mechanism}")
        return build_argv(workdir, argv, roots=roots)
    if mechanism == BUBBLEWRAP:
        return plan_argv(workdir, argv, roots=roots, network=network, base_env=base_env)
    return landlock_argv(
        workdir, argv, roots=roots, network=network, scratch=scratch, base_env=base_env
    )


def reaped_argv(argv: Sequence[str]) -> list[str]:
    """`argv` under the subreaper launcher (`subreaper.py`): whatever the command leaves
    running (a daemon, `setsid -f`, a double fork) is killed when it ends or is stopped.
    For commands outside a pid namespace; bubblewrap's own namespaces do this already."""
    return [os.path.realpath(sys.executable), "-I", "-S", str(SUBREAPER), "--", *argv]
