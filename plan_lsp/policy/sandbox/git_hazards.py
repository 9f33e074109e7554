"""What in a repository's git setup the plan-mode git shim (`git.py`) cannot neutralise: keys
naming a program no override covers, `core.worktree`, a git directory or alternates outside
the repository, and in the git directory (git follows its links and prints what it reads)
any link, special file or pointer leaving the repository.
"""

from __future__ import annotations

import fnmatch
import os
import subprocess
from pathlib import Path

from plan_lsp.policy.safe_fs import WriteRefused, read_file_bytes
from plan_lsp.policy.sandbox.git import (
    DYNAMIC_OVERRIDES,
    PROGRAM_WORDS,
    STATIC_OVERRIDES,
    hardened_git_env,
    real_git,
)
from plan_lsp.policy.sandbox.layout import plan_environment


def _covered(name: str) -> bool:
    lowered = name.lower()
    if any(lowered == key.lower() for key, _ in STATIC_OVERRIDES):
        return True
    return any(fnmatch.fnmatchcase(name, pattern) for pattern, _ in DYNAMIC_OVERRIDES)


def _git_output(
    git: str, repo: Path, *args: str, home: str = "/tmp", hardened: bool = False
) -> bytes | None:
    """What `git -C repo ARGS` prints, or None when it fails; `hardened`: with the shim's
    fixed overrides (git reading the index runs the repository's `core.fsmonitor`)."""
    env = plan_environment(home=home)
    try:
        proc = subprocess.run(
            [git, "-C", str(repo), *args],
            capture_output=True,
            env=hardened_git_env(env) if hardened else env,
            timeout=10,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def _config_entries(repo: Path, git: str) -> list[tuple[str, str, str]] | None:
    """(origin, name, value) for every configuration entry git reads in `repo`."""
    home = os.environ.get("HOME", "/tmp") or "/tmp"
    out = _git_output(git, repo, "config", "--list", "--show-origin", "-z", home=home)
    if out is None:
        return None
    fields = out.decode("utf-8", "replace").split("\0")
    entries: list[tuple[str, str, str]] = []
    for origin, item in zip(fields[0::2], fields[1::2], strict=False):
        name, _, value = item.partition("\n")
        entries.append((origin, name, value))
    return entries


def _git_dir(repo: Path, git: str) -> Path | None:
    line = (_git_output(git, repo, "rev-parse", "--absolute-git-dir") or b"").strip()
    return Path(os.fsdecode(line)) if line else None


# Submodules checked below a repository (each a repository of its own), and how deep.
MAX_SUBMODULES = 100
MAX_SUBMODULE_DEPTH = 3


def git_config_hazards(repo: Path) -> list[str]:
    """What in `repo`'s git setup the shim cannot neutralise, one sentence per finding naming
    the key and its file; empty when git runs safely there (or `repo` is no repository).
    Populated submodules are checked the same way: git reads their git directories too
    (`git status` resolves each one's HEAD, whatever `diff.ignoreSubmodules` says)."""
    git = real_git()
    if git is None or not os.path.isdir(repo):
        return []
    repo = Path(os.path.realpath(repo))
    return _hazards(repo, repo, git, 0)


def _hazards(repo: Path, top: Path, git: str, depth: int) -> list[str]:
    """`repo`'s hazards; `top`, the repository the command runs in, is where nothing may
    lead out of."""
    entries = _config_entries(repo, git)
    hazards: list[str] = []
    if entries is None:
        hazards.append("the git configuration could not be read, so it cannot be checked")
    for origin, name, value in entries or []:
        last = name.rsplit(".", 1)[-1].lower()
        if name.lower() == "core.worktree":
            hazards.append(
                f"{name}={value} ({origin}) moves the work tree outside the checked paths"
            )
        elif last in PROGRAM_WORDS and not _covered(name):
            hazards.append(f"{name} ({origin}) names a program git may run")
    git_dir = _git_dir(repo, git)
    if git_dir is None and (repo / ".git").is_dir() and not (repo / ".git").is_symlink():
        git_dir = repo / ".git"  # git cannot say (a pointer broke it): walk it all the same
    if git_dir is not None and top not in (git_dir, *git_dir.parents):
        hazards.append(f"the git directory {git_dir} lies outside {top}")
    if git_dir is not None:
        hazards.extend(_alternates(git_dir, top))
        hazards.extend(git_dir_hazards(git_dir, top))
    if hazards:
        return hazards
    populated = [p for p in _gitlinks(repo, git) if os.path.lexists(repo / p / ".git")]
    if len(populated) > MAX_SUBMODULES:
        return [f"{repo} has {len(populated)} checked-out submodules, more than the "
                f"{MAX_SUBMODULES} that are checked"]  # fmt: skip
    for path in populated:
        hazards.extend(_submodule_hazards(repo / path, top, git, depth))
    return hazards


def _gitlinks(repo: Path, git: str) -> list[str]:
    """The paths of the submodules (gitlinks) in `repo`'s index."""
    out = _git_output(git, repo, "ls-files", "--stage", "-z", hardened=True)
    found = []
    for item in (out or b"").split(b"\0"):
        if item.startswith(b"160000 "):
            found.append(os.fsdecode(item.partition(b"\t")[2]))
    return found


def _submodule_hazards(path: Path, top: Path, git: str, depth: int) -> list[str]:
    dot = path / ".git"
    shown = dot.relative_to(top) if top in dot.parents else dot
    if not os.path.lexists(dot):
        return []  # not checked out: git reads nothing there
    if depth >= MAX_SUBMODULE_DEPTH:
        return [f"{shown}: submodules nested deeper than {MAX_SUBMODULE_DEPTH} are not checked"]
    if dot.is_symlink():
        return [f"{shown} is a link (git follows it into another git directory)"]
    real = Path(os.path.realpath(path))
    if top not in (real, *real.parents):
        return [f"the submodule {path} lies outside {top}"]
    if dot.is_file():
        try:
            data = read_file_bytes(dot, max_bytes=4096) or b""
        except (OSError, WriteRefused) as exc:
            return [f"{shown} cannot be checked: {exc}"]
        key, _, where = data.decode("utf-8", errors="replace").strip().partition(":")
        target = Path(os.path.realpath(path / where.strip()))
        if key != "gitdir" or not where.strip():
            return [f"{shown} is a file but no `gitdir:` pointer (git would read it)"]
        if top not in (target, *target.parents):
            return [f"{shown} points git at {target}, outside {top}"]
    elif not dot.is_dir():
        return [f"{shown} is not a regular file or folder (git would open it)"]
    return _hazards(real, top, git, depth + 1)


# Files git reads as paths to somewhere else (relative to the file's folder, or absolute).
POINTER_FILES = frozenset({"commondir", "gitdir"})
# Entries of the git directory the walk does not go into: the loose objects' folders (git
# inflates a loose object and checks its hash; the folders themselves are checked). Pack
# files, their indexes and `multi-pack-index` are parsed, and printed from when they are
# not what they say: `objects/pack` is walked like the rest.
_OBJECT_FANOUT = frozenset(f"{i:02x}" for i in range(256))
# More entries than any ordinary git directory outside its objects: a hazard of its own.
MAX_GIT_DIR_ENTRIES = 50_000


def git_dir_hazards(git_dir: Path, repo: Path) -> list[str]:
    """Links, special files and outward pointers inside `git_dir` (which must lie inside
    `repo`, or be the repository's own folder elsewhere that the caller already refused)."""
    found: list[str] = []
    seen = 0
    stack = [git_dir]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            found.append(f"{folder} cannot be read, so it cannot be checked: {exc.strerror}")
            continue
        seen += len(entries)
        if seen > MAX_GIT_DIR_ENTRIES:
            return [*found, f"{git_dir} holds more than {MAX_GIT_DIR_ENTRIES:,} entries "
                            "outside its objects, too many to check"]  # fmt: skip
        for entry in entries:
            path = Path(entry.path)
            shown = path.relative_to(git_dir).as_posix()
            if entry.is_symlink():
                target = Path(os.path.realpath(path))
                if repo not in (target, *target.parents):
                    found.append(f".git/{shown} is a link to {target}, outside {repo} (git "
                                 "follows it and prints what it reads)")  # fmt: skip
                continue
            if entry.is_dir(follow_symlinks=False):
                objects = path.parent == git_dir / "objects"
                if not (objects and entry.name in _OBJECT_FANOUT):
                    stack.append(path)
                continue
            if not entry.is_file(follow_symlinks=False):
                found.append(f".git/{shown} is not a regular file (git would open it)")
                continue
            if entry.name in POINTER_FILES:
                found.extend(_pointer_hazard(path, shown, repo))
    return found


def _pointer_hazard(path: Path, shown: str, repo: Path) -> list[str]:
    try:
        data = read_file_bytes(path, max_bytes=4096)
    except (OSError, WriteRefused) as exc:
        return [f".git/{shown} cannot be checked: {exc}"]
    text = (data or b"").decode("utf-8", errors="replace").strip()
    target = Path(os.path.realpath(path.parent / text)) if text else path.parent
    if repo not in (target, *target.parents):
        return [f".git/{shown} points git at {target}, outside {repo}"]
    return []


def _alternates(git_dir: Path, repo: Path) -> list[str]:
    path = git_dir / "objects" / "info" / "alternates"
    try:
        # As git reads it (through a link), but never blocked on (a FIFO) nor read unbounded.
        data = read_file_bytes(path, max_bytes=1024 * 1024, follow_link=True)
    except WriteRefused as exc:
        return [f"objects/info/alternates cannot be checked: {exc}"]
    except OSError:
        return []
    lines = [] if data is None else data.decode("utf-8", errors="replace").splitlines()
    found = []
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        target = Path(os.path.realpath(git_dir / "objects" / line))
        if repo not in (target, *target.parents):
            found.append(f"objects/info/alternates reads objects from {target}, outside {repo}")
    return found
