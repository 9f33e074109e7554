"""Which file a program name runs. Under `classified` it must be the system's program:
not one PATH finds in a directory the workspace controls, and not a version-manager shim that
picks the real program from files in the workspace (asdf and mise accept `path:` versions,
volta downloads the pinned tool)."""

from __future__ import annotations

import os
from functools import lru_cache
from typing import TYPE_CHECKING

from plan_lsp.policy.shell.database import database

if TYPE_CHECKING:
    from plan_lsp.policy.shell.paths import PathPolicy

# bash runs these itself; PATH is not searched.
BASH_BUILTINS = frozenset(
    {"echo", "pwd", "type", "command", "true", "false", "printf", "cd", "test", "["}
)


def program_problem(name: str, policy: PathPolicy) -> str | None:
    """Why running `name` is not proven to run the system program, or None."""
    if name in BASH_BUILTINS:
        return None
    path = policy.path_variable
    risky = _risky_path_dirs(path, policy.roots)
    # Looked up afresh where the workspace controls a PATH directory: its files may change.
    found = _which(name, path) if risky else _cached_which(name, path)
    if found is None:
        return None
    entry, program = found
    if entry in risky:
        return (
            f"`{name}` would run {program} (PATH lists `{entry or '.'}`, a "
            "directory the workspace controls)"
        )
    for marker in database().workspace_selected_shims:
        if marker in program:
            return (
                f"`{name}` runs {program}, a version-manager shim that chooses the real "
                "program from files in the workspace; without a sandbox that is not allowed"
            )
    return None


def _which(name: str, path: str) -> tuple[str, str] | None:
    """The PATH entry where `name` is found, and the program's path."""
    for entry in path.split(":"):
        candidate = os.path.join(entry or ".", name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return entry, candidate
    return None


_cached_which = lru_cache(maxsize=256)(_which)


@lru_cache(maxsize=32)
def _risky_path_dirs(path: str, roots: tuple[str, ...]) -> frozenset[str]:
    risky = set()
    for entry in path.split(":"):
        if not entry.startswith("/"):
            risky.add(entry)
            continue
        real = os.path.realpath(entry)
        if any(real == r or real.startswith(r + "/") for r in roots):
            risky.add(entry)
    return frozenset(risky)
