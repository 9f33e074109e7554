"""Workspace confinement for paths the model supplies.

A model-supplied path is untrusted. It is resolved against the first workspace root and must
stay inside a workspace root both as written and after following symlinks. Refusals raise
`PathRefused` with a message the model (and the user reading the log) can act on.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path, PurePath

from plan_lsp.policy.sandbox.layout import plan_layout


class PathRefused(ValueError):
    """A path the file tools may not touch; the message says why."""


def _lexically_inside(path: Path, root: Path) -> bool:
    root_text = os.path.normpath(root)
    text = os.path.normpath(path)
    return text == root_text or text.startswith(root_text.rstrip(os.sep) + os.sep)


def _resolved_roots(roots: Sequence[Path]) -> list[Path]:
    return [r.resolve() for r in roots]


def resolve_path(raw: object, roots: Sequence[Path], *, default: str = ".") -> Path:
    """The real path `raw` names inside the workspace, or raise PathRefused."""
    if not roots:
        raise PathRefused("no workspace folder is open, so no file can be accessed")
    if raw is None or raw == "":
        raw = default
    if not isinstance(raw, str):
        raise PathRefused(f"a path must be a string, got {type(raw).__name__}")
    if "\x00" in raw:
        raise PathRefused("the path contains a NUL byte")
    if raw.startswith("~"):
        raise PathRefused(
            f"{raw!r}: home-directory paths are outside the workspace; "
            "use a path relative to the workspace folder"
        )
    given = Path(raw)
    candidate = given if given.is_absolute() else roots[0] / given
    real_roots = _resolved_roots(roots)
    if not any(_lexically_inside(candidate, r) for r in [*roots, *real_roots]):
        if ".." in PurePath(raw).parts:
            raise PathRefused(
                f"{raw!r} climbs out of the workspace with '..'; only files inside "
                f"{_roots_text(roots)} can be accessed"
            )
        raise PathRefused(
            f"{raw!r} is outside the workspace; only files inside {_roots_text(roots)} "
            "can be accessed"
        )
    try:
        resolved = candidate.resolve()
    except (OSError, RuntimeError) as exc:
        raise PathRefused(f"{raw!r} cannot be resolved: {exc}") from exc
    if not any(resolved.is_relative_to(r) for r in real_roots):
        raise PathRefused(
            f"{raw!r} is a symlink (or lies under one) that points to {resolved}, outside the "
            "workspace; it cannot be accessed"
        )
    place = inside_any(resolved, hidden_places(roots))
    if place is not None:
        raise PathRefused(
            f"{raw!r} lies in {place}, which is hidden from the agent in every mode: it holds "
            "the user's credentials or plan-lsp's own configuration and keys (the shell "
            "sandbox hides it too)"
        )
    return resolved


def hidden_places(roots: Sequence[Path]) -> tuple[Path, ...]:
    """What the plan-mode sandbox hides even inside a workspace root (credential files and
    folders named by the environment, the user's plan-lsp folders, the home's usual
    credentials where a root shows them): the file tools never read, list or search them."""
    return plan_layout(_resolved_roots(roots)).credentials


def inside_any(path: Path, places: Sequence[Path]) -> Path | None:
    """The first of `places` that `path` (resolved) is or lies in."""
    return next((p for p in places if path == p or path.is_relative_to(p)), None)


def is_in_workspace(path: Path, roots: Sequence[Path]) -> bool:
    """`path` (already resolved) lies inside one of the workspace roots."""
    return any(path.is_relative_to(r) for r in _resolved_roots(roots))


def display_path(path: Path, roots: Sequence[Path]) -> str:
    """How a path is shown to the model: relative to the first root, else absolute.

    Relative paths are resolved against the first root, so what is shown can be passed back.
    """
    if roots:
        first = roots[0].resolve()
        if path.is_relative_to(first):
            rel = path.relative_to(first).as_posix()
            return rel or "."
    return str(path)


def _roots_text(roots: Sequence[Path]) -> str:
    return ", ".join(str(r) for r in roots)
