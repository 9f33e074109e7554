"""Helpers of the checkpoint tests: the state of a tree as plain values (every file's hash
and permission bits, every link's target, every folder), independent of the store."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from pathlib import Path

State = dict[str, tuple[object, ...]]


def tree(root: Path, skip: tuple[str, ...] = (".git",)) -> State:
    out: State = {}

    def walk(folder: str, prefix: str) -> None:
        for name in sorted(os.listdir(folder)):
            if name in skip:
                continue
            full, rel = os.path.join(folder, name), prefix + name
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(full))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", stat.S_IMODE(st.st_mode))
                walk(full, rel + "/")
            else:
                digest = hashlib.sha256(Path(full).read_bytes()).hexdigest()
                out[rel] = ("file", stat.S_IMODE(st.st_mode), digest)

    walk(str(root), "")
    return out


def remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()


def files_below(root: Path) -> dict[str, bytes]:
    """Every file below `root` (a `.git` folder): path -> bytes, and each one's mtime."""
    out: dict[str, bytes] = {}
    for folder, _dirs, names in os.walk(root):
        for name in names:
            full = os.path.join(folder, name)
            st = os.lstat(full)
            out[os.path.relpath(full, root)] = (
                Path(full).read_bytes() + str(st.st_mtime_ns).encode()
            )
    return out
