"""The OS sandbox for shell commands, the wall behind the shell classifier (docs/security.md):
`sandbox_status()` proves which mechanism holds (bubblewrap, else Landlock, else none);
`sandbox_argv()` wraps a command for the `plan` or `build` profile.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names of _MODULES, for the type checker (a test keeps them equal)
    from plan_lsp.policy.sandbox.bwrap import host_limited as host_limited
    from plan_lsp.policy.sandbox.git import git_shim as git_shim
    from plan_lsp.policy.sandbox.git import git_shim_dir as git_shim_dir
    from plan_lsp.policy.sandbox.git import hardened_git_env as hardened_git_env
    from plan_lsp.policy.sandbox.git import unsandboxed_plan_env as unsandboxed_plan_env
    from plan_lsp.policy.sandbox.git_hazards import git_config_hazards as git_config_hazards
    from plan_lsp.policy.sandbox.known import sandbox_status as sandbox_status
    from plan_lsp.policy.sandbox.layout import plan_environment as plan_environment
    from plan_lsp.policy.sandbox.probe import Profile as Profile
    from plan_lsp.policy.sandbox.probe import SandboxUnavailable as SandboxUnavailable
    from plan_lsp.policy.sandbox.probe import probe_sandbox as probe_sandbox
    from plan_lsp.policy.sandbox.status import BUBBLEWRAP as BUBBLEWRAP
    from plan_lsp.policy.sandbox.status import LANDLOCK as LANDLOCK
    from plan_lsp.policy.sandbox.status import Mechanism as Mechanism
    from plan_lsp.policy.sandbox.status import SandboxStatus as SandboxStatus

# The package's names by module, each loaded when first asked for: the mechanisms load only
# when a command needs them. The one lazy boundary; no module below imports through it.
_MODULES: dict[str, str] = {
    "bwrap": "host_limited",
    "git": "git_shim git_shim_dir hardened_git_env unsandboxed_plan_env",
    "git_hazards": "git_config_hazards",
    "known": "sandbox_status",
    "layout": "plan_environment",
    "probe": "Profile SandboxUnavailable probe_sandbox",
    "status": "BUBBLEWRAP LANDLOCK Mechanism SandboxStatus",
}
_FROM = {name: module for module, names in _MODULES.items() for name in names.split()}


def __getattr__(name: str) -> Any:
    module = _FROM.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [*_FROM, "reaped_argv", "sandbox_argv", "sandbox_kind"]

SUBREAPER = Path(__file__).with_name("subreaper.py")


def sandbox_kind() -> str | None:
    """The working mechanism's name, or None."""
    from plan_lsp.policy.sandbox.known import sandbox_status

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
    """`argv` wrapped to run in `workdir` under `profile`, with the proven mechanism unless
    one is given; `scratch`: Landlock's one writable folder; `base_env`: the environment the
    allow-list is taken from."""
    from plan_lsp.policy.sandbox.known import sandbox_status
    from plan_lsp.policy.sandbox.probe import SandboxUnavailable, mechanism_argv

    if mechanism is None:
        mechanism = sandbox_status().mechanism
    if mechanism is None:
        raise SandboxUnavailable("no working sandbox on this machine")
    return mechanism_argv(
        workdir,
        argv,
        mechanism,
        roots=roots,
        network=network,
        profile=profile,
        scratch=scratch,
        base_env=base_env,
    )


def reaped_argv(argv: Sequence[str]) -> list[str]:
    """`argv` under the subreaper launcher: what the command leaves running dies with it."""
    return [os.path.realpath(sys.executable), "-I", "-S", str(SUBREAPER), "--", *argv]
