"""Which mechanism holds here: the probes (`selftest.py`) tried in order, and the argv of a
command under a mechanism. Only a probe that held proves a sandbox."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from plan_lsp.policy.sandbox.bwrap import build_argv, bwrap_path, missing_features, plan_argv
from plan_lsp.policy.sandbox.landlock import landlock_abi, landlock_argv, seccomp_available
from plan_lsp.policy.sandbox.selftest import ProbeResult, probe_build, probe_plan, timed
from plan_lsp.policy.sandbox.status import (
    BUBBLEWRAP,
    LANDLOCK,
    ORDER_VARIABLE,
    Mechanism,
    SandboxStatus,
)

Profile = Literal["plan", "build"]
MECHANISMS: tuple[Mechanism, ...] = (BUBBLEWRAP, LANDLOCK)


class SandboxUnavailable(RuntimeError):
    """A sandboxed run was asked for where no mechanism (or not this profile) works."""


def mechanism_argv(
    workdir: Path,
    argv: list[str],
    mechanism: Mechanism,
    *,
    roots: Sequence[Path] = (),
    network: bool = False,
    profile: Profile = "plan",
    scratch: Path | None = None,
    base_env: Mapping[str, str] | None = None,
) -> list[str]:
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
        return mechanism_argv(workdir, list(argv), mechanism, scratch=scratch)

    return timed(lambda: probe_plan(build))


def _probe_build() -> tuple[ProbeResult, float]:
    def build(workdir: Path, argv: Sequence[str]) -> list[str]:
        return mechanism_argv(workdir, list(argv), BUBBLEWRAP, profile="build")

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
            if lacking := missing_features():
                result = ProbeResult(True, f"{result.why}; this bwrap lacks {', '.join(lacking)}")
            build_note = (
                "build-mode commands run with .plan-lsp read-only"
                if build_ok
                else f"build profile unavailable ({build_result.why}); the permission "
                "prompt guards build-mode commands"
            )
        else:
            build_note = (
                f"ABI {landlock_abi()}; build-mode commands run unsandboxed (Landlock cannot "
                "make only .plan-lsp read-only); the permission prompt guards them"
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
