"""Where a workspace's session state lives (docs/architecture.md, "State"):
`<state root>/<name>-<hash of the real path>/state.db`, never in the workspace, so two folders
of one name never share a database and a folder reached through a link finds its own.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import stat
import sys
from collections.abc import Mapping
from pathlib import Path

STATE_DIR_VARIABLE = "PLAN_LSP_STATE_DIR"
STATE_FILE = "state.db"
FOLDER_MODE = 0o700
# Characters of the folder's name kept in the key (the hash tells folders apart).
_NAME_CHARS = 40
_HASH_CHARS = 16
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
# Linux's ioctl asking a file's inode generation (ext4, btrfs, XFS): _IOR('v', 1, long).
_FS_IOC_GETVERSION = 0x80087601 if sys.maxsize > 2**32 else 0x80047601


class StateDirUnavailable(OSError):
    """The user's state folder cannot be used; the message says where and why."""


def state_root(environ: Mapping[str, str] | None = None) -> Path:
    """The user's plan-lsp state folder (it may not exist yet).

    Relative values of the variables are ignored, as the XDG specification asks."""
    env = os.environ if environ is None else environ
    override = env.get(STATE_DIR_VARIABLE, "")
    if os.path.isabs(override):
        return Path(override)
    xdg = env.get("XDG_STATE_HOME", "")
    if os.path.isabs(xdg):
        return Path(xdg) / "plan-lsp"
    home = env.get("HOME", "")
    base = Path(home) if os.path.isabs(home) else Path.home()
    return base / ".local" / "state" / "plan-lsp"


def workspace_key(root: Path) -> str:
    """The name of `root`'s folder in the state root: `<name>-<hash>` of its real path.

    Same real path, same key (whatever link it is reached through); the name keeps only
    letters, digits, `.`, `_` and `-` and never starts with a dot."""
    real = os.path.realpath(root)
    digest = hashlib.sha256(os.fsencode(real)).hexdigest()[:_HASH_CHARS]
    name = _UNSAFE.sub("_", os.path.basename(real))[:_NAME_CHARS].lstrip(".") or "root"
    return f"{name}-{digest}"


def folder_identity(root: Path) -> str | None:
    """What tells the folder `root` from another made at the same path later: its device
    and inode, and — since a filesystem may give a new folder the inode of one just deleted
    (ext4 does) — the inode's generation where Linux reports it, the birth time where `stat`
    does (macOS). None when the folder cannot be opened."""
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        parts = [st.st_dev, st.st_ino, getattr(st, "st_birthtime", "")]
        try:
            generation = fcntl.ioctl(fd, _FS_IOC_GETVERSION, bytes(8))[:4]
            parts.append(int.from_bytes(generation, sys.byteorder))
        except OSError:
            pass  # the filesystem keeps none (tmpfs never reuses an inode number)
    finally:
        os.close(fd)
    return ":".join(str(p) for p in parts)


def _private_folder(path: Path) -> None:
    """Make `path` (and missing parents) as folders of mode 0700; an existing one must be a
    folder of this user (the user's own link to one elsewhere, e.g. a dotfile manager's,
    is followed)."""
    try:
        path.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
        st = os.stat(path)
    except OSError as exc:
        raise StateDirUnavailable(f"the state folder {path} cannot be made: {exc}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise StateDirUnavailable(f"the state folder {path} is not a folder")
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        raise StateDirUnavailable(
            f"the state folder {path} belongs to another user (uid {st.st_uid})"
        )


def workspace_state_dir(root: Path, environ: Mapping[str, str] | None = None) -> Path:
    """`<state root>/<key of root>`, made private (0700) if missing; StateDirUnavailable
    when it cannot be."""
    base = state_root(environ)
    _private_folder(base)
    folder = base / workspace_key(root)
    _private_folder(folder)
    return folder


def workspace_state_file(root: Path, environ: Mapping[str, str] | None = None) -> Path:
    """The state database of the workspace `root` (its folder made if missing)."""
    return workspace_state_dir(root, environ) / STATE_FILE
