"""Random trees of folders, files, symbolic links, hard links and FIFOs for property tests
of the filesystem rules (`tests/test_safe_fs.py`, `tests/test_plan_paths.py`).

A tree lives in a fresh folder `root` with the places named in `wheres` (by default the
workspace `ws` and a folder `out` outside it); links point anywhere among them, relative or
absolute, dangling or not.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from hypothesis import strategies as st

NAMES = ["a", "b", "c"]
WHERES = ["ws", "out"]

Op = tuple[object, ...]


def tree_ops(
    names: list[str] = NAMES, wheres: list[str] = WHERES, max_size: int = 16
) -> st.SearchStrategy[list[Op]]:
    name = st.sampled_from(names)
    rel = st.lists(name, min_size=1, max_size=3).map("/".join)
    where = st.sampled_from(wheres)
    link_target = st.one_of(
        rel,
        rel.map(lambda r: "../" + r),
        rel.map(lambda r: "../../out/" + r),
        st.sampled_from([".", "..", "../..", "../../..", "@out", "@out/a", "@ws/a", "@ws"]),
        st.tuples(where, rel).map(lambda t: f"@{t[0]}/{t[1]}"),
    )
    op = st.one_of(
        st.tuples(st.just("dir"), where, rel),
        st.tuples(st.just("file"), where, rel, st.binary(max_size=8)),
        st.tuples(st.just("symlink"), where, rel, link_target),
        st.tuples(st.just("hardlink"), where, rel, where, rel),
        st.tuples(st.just("fifo"), where, rel),
    )
    return st.lists(op, max_size=max_size)


def build_tree(root: Path, ops: list[Op]) -> None:
    """Apply `ops` under `root`, skipping steps the tree makes impossible."""
    for op in ops:
        kind, where, rel = op[0], op[1], op[2]
        path = root / str(where) / str(rel)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if kind == "dir":
                path.mkdir()
            elif kind == "file":
                # O_EXCL: never open an existing name (a FIFO would block the test)
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW)
                with os.fdopen(fd, "wb") as handle:
                    handle.write(op[3])  # type: ignore[arg-type]
            elif kind == "symlink":
                target = str(op[3])
                if target.startswith("@"):
                    target = str(root / target[1:])
                path.symlink_to(target)
            elif kind == "hardlink":
                os.link(root / str(op[3]) / str(op[4]), path, follow_symlinks=False)
            elif kind == "fifo":
                os.mkfifo(path)
        except OSError:
            continue


def snapshot(root: Path) -> dict[str, tuple[object, ...]]:
    """Every entry under `root`, links not followed: kind, content or target, mode."""
    entries: dict[str, tuple[object, ...]] = {}
    for directory, dirs, files in os.walk(root, followlinks=False):
        for name in dirs + files:
            path = Path(directory) / name
            st_ = path.lstat()
            rel = str(path.relative_to(root))
            if stat.S_ISLNK(st_.st_mode):
                entries[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(st_.st_mode):
                entries[rel] = ("dir", stat.S_IMODE(st_.st_mode))
            elif stat.S_ISREG(st_.st_mode):
                entries[rel] = ("file", path.read_bytes(), stat.S_IMODE(st_.st_mode))
            else:
                entries[rel] = ("other", stat.S_IFMT(st_.st_mode))
    return entries


def clean_chain(anchor: Path, parts: list[str]) -> bool:
    """No link and nothing but folders on the way; the target absent or a regular file."""
    current = anchor
    for index, part in enumerate(parts):
        current = current / part
        try:
            st_ = current.lstat()
        except FileNotFoundError:
            return True
        if stat.S_ISLNK(st_.st_mode):
            return False
        last = index == len(parts) - 1
        if not last and not stat.S_ISDIR(st_.st_mode):
            return False
        if last and not stat.S_ISREG(st_.st_mode):
            return False
    return True
