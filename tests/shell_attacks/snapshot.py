"""A byte-level picture of a directory tree, to prove that nothing changed."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

Entry = tuple[str, int, str, int]  # kind, mode, content digest or link target, mtime_ns


def snapshot(root: Path, *, dir_times: bool = True) -> dict[str, Entry]:
    """Every path under `root` (root included): kind, mode, content hash or link target,
    and modification time (directories only when `dir_times`). Symlinks are not followed."""
    found: dict[str, Entry] = {}

    def record(path: Path, rel: str) -> None:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return
        mode = stat.S_IMODE(st.st_mode)
        if stat.S_ISLNK(st.st_mode):
            found[rel] = ("link", mode, os.readlink(path), 0)
        elif stat.S_ISREG(st.st_mode):
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            found[rel] = ("file", mode, digest, st.st_mtime_ns)
        elif stat.S_ISDIR(st.st_mode):
            found[rel] = ("dir", mode, "", st.st_mtime_ns if dir_times else 0)
        else:
            found[rel] = ("other", mode, str(stat.S_IFMT(st.st_mode)), st.st_mtime_ns)

    record(root, ".")
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath)
        for name in sorted(dirnames + filenames):
            path = base / name
            record(path, str(path.relative_to(root)))
    return found


def differences(before: dict[str, Entry], after: dict[str, Entry]) -> list[str]:
    """Human-readable changes between two snapshots (empty when identical)."""
    changes: list[str] = []
    for path in sorted(before.keys() | after.keys()):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        if old is None:
            changes.append(f"created {path}")
        elif new is None:
            changes.append(f"deleted {path}")
        else:
            what = [
                name
                for name, a, b in zip(("kind", "mode", "content", "mtime"), old, new, strict=True)
                if a != b
            ]
            changes.append(f"changed {path} ({', '.join(what)})")
    return changes
