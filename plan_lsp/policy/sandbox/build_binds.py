"""The build profile's binds for the files that run code later (`policy/autorun.toml`): each
read-only for a build-mode command, but those its words name (the user was asked for exactly
that command).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from plan_lsp.policy.autorun import GIT, Entry, autorun, command_hits, concrete, git_places, led_to
from plan_lsp.policy.sandbox.layout import below


@dataclass(frozen=True)
class Place:
    """What the build sandbox does with one place: `ro` binds it read-only; `missing` binds
    an empty placeholder folder read-only in its place (nothing can be created there, and
    git does not see it); `pin` binds a folder onto itself, writable, so it cannot be
    renamed away with the protected files inside (a mount point cannot be); `absent`: a file
    git dies on when a folder stands in its place, removed after the command if it made it."""

    path: Path
    how: Literal["ro", "missing", "pin", "absent"]


def sandbox_places(roots: Sequence[Path]) -> list[Place]:
    """Where the build sandbox binds each protected file of `roots` (`.plan-lsp/` is bound
    apart), parents first; a missing one gets a placeholder at its topmost missing folder."""
    places: dict[Path, Place] = {}

    def put(path: Path, how: Literal["ro", "missing", "pin", "absent"]) -> None:
        places.setdefault(path, Place(path, how))

    def visit(base: Path, entry: Entry) -> None:
        for target in concrete(base, entry.parts):
            if os.path.exists(target) and not is_placeholder(target):
                put(target, "ro")
                continue
            if os.path.lexists(target) and not is_placeholder(target):
                continue  # a dangling link: nothing to bind (docs/security.md)
            if not entry.placeholder:
                put(target, "absent")  # git would die on a folder in its place
                continue
            missing = target
            while not os.path.lexists(missing.parent) and missing.parent != base:
                missing = missing.parent
            if missing.parent.is_symlink() and missing.parent.is_dir():
                put(missing.parent, "ro")  # its target, read-only
            elif missing.parent.is_dir():
                put(missing, "missing")
        for parent in concrete(base, entry.parts[:-1]):
            if parent != base and parent.is_dir() and not parent.is_symlink():
                put(parent, "pin")

    for root in roots:
        real = Path(os.path.realpath(root))
        dirs, hook_dirs = git_places(real)
        for entry in autorun().file:
            if entry.path == ".plan-lsp/" or not entry.sandbox:
                continue
            if entry.path == GIT:
                # Only bound where it is: a placeholder `.git` would stop every git command.
                marker = real / GIT
                if marker.is_dir() and not marker.is_symlink():
                    put(marker, "pin")
                elif os.path.exists(marker):
                    put(marker, "ro")
            elif entry.where == "root":
                visit(real, entry)
            else:
                for gitdir in dirs:
                    if gitdir.is_dir():
                        put(gitdir, "pin")
                        visit(gitdir, entry)
        for hooks in hook_dirs:
            if hooks.is_dir():
                put(hooks, "ro")
    # What a protected file leads to (a hook that is a link, an included configuration).
    # Outside the roots the build sandbox writes nothing anyway.
    real_roots = [Path(os.path.realpath(r)) for r in roots]
    for target in led_to(roots):
        if os.path.exists(target) and any(below(target, r) for r in real_roots):
            put(target, "ro")
    return sorted(places.values(), key=lambda p: len(p.path.parts))


# An empty folder whose modification time is the epoch: a placeholder, removed when the
# command ends (or by the next one). No tool or person makes such a folder.
def is_placeholder(path: Path) -> bool:
    try:
        st = os.lstat(path)
        return st.st_mtime == 0 and path.is_dir() and not any(path.iterdir())
    except OSError:
        return False


def make_placeholder(path: Path) -> bool:
    """Make the placeholder `path` (or keep a leftover one); False if something else is there."""
    if is_placeholder(path):
        return True
    try:
        os.mkdir(path, 0o755)
        os.utime(path, (0, 0), follow_symlinks=False)
    except OSError:
        return False
    return True


# Runs bwrap (`$n` placeholders first, `$m` files that must stay absent, then the argv), then
# removes the placeholders and whatever the command made in the place of an absent file.
PLACEHOLDERS_SCRIPT = (
    'n=$1; shift; places=("${@:1:n}"); shift "$n"; m=$1; shift; absent=("${@:1:m}"); '
    'shift "$m"; "$@"; s=$?; '
    'for p in "${places[@]}"; do rmdir -- "$p" 2>/dev/null; done; '
    'for p in "${absent[@]}"; do if [ -e "$p" ] || [ -L "$p" ]; then rm -rf -- "$p" && '
    'echo "plan-lsp: removed $p, which this command made: it moves where git finds its '
    'configuration and hooks (a command that names it is asked about)" >&2; fi; done; exit $s'
)


def autorun_binds(
    workdir: Path, argv: Sequence[str], roots: Sequence[Path]
) -> tuple[list[str], list[str], list[str]]:
    """(bwrap options, placeholders made, files to remove if the command makes them) that
    keep the files that run code later as they are, but those the command's words name
    (asked for in every permission mode)."""
    command = argv[2] if len(argv) > 2 and argv[1] == "-c" else " ".join(argv)
    named = [h.real for h in command_hits(command, roots, Path(workdir)) if h.real is not None]
    options: list[str] = []
    made: list[str] = []
    absent: list[str] = []
    for place in sandbox_places(roots):
        path = place.path
        if place.how != "pin" and any(n == path or below(n, path) or below(path, n) for n in named):
            continue
        if place.how == "absent":
            absent.append(str(path))
            continue
        if place.how == "missing":
            if not make_placeholder(path):
                continue
            made.append(str(path))
        options += ["--bind" if place.how == "pin" else "--ro-bind", str(path), str(path)]
    return options, made, absent
