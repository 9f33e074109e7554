"""Property: whatever a run does (create, modify, delete, rename, chmod, file <-> folder <->
link), a revert to any of its checkpoints gives back that checkpoint's tree exactly (every
file's bytes and permission bits, every link's target, every folder), a redo gives back the
end state exactly, and a file the user wrote meanwhile survives both."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import example, given
from hypothesis import strategies as st

from plan_lsp.session.checkpoints import AFTER, CheckpointStore
from tests.checkpoint_trees import remove, tree

PATHS = ["a", "b", "c", "c/a", "c/b", "c/c", "c/c/a", "d", "d/a"]
Op = tuple[str, str, str]


def _op(kind: str, args: st.SearchStrategy[str]) -> st.SearchStrategy[Op]:
    return st.tuples(st.just(kind), st.sampled_from(PATHS), args)


ops = st.one_of(
    _op("write", st.sampled_from(["", "x\n", "x\ny\n", "z"])),
    _op("delete", st.just("")),
    _op("mkdir", st.just("")),
    _op("link", st.sampled_from(["a", "c/a", "../out", "nowhere"])),
    _op("chmod", st.sampled_from(["644", "755", "600"])),
    _op("rename", st.sampled_from(PATHS)),
)


def apply(root: Path, op: Op) -> None:
    kind, rel, arg = op
    path = root / rel
    try:
        if kind == "write":
            if path.is_dir() and not path.is_symlink():
                remove(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.is_symlink():
                path.unlink()
            path.write_text(arg)
        elif kind == "delete":
            remove(path)
        elif kind == "mkdir":
            remove(path)
            path.mkdir(parents=True)
        elif kind == "link":
            remove(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(arg, path)
        elif kind == "chmod":
            if path.is_file() and not path.is_symlink():
                os.chmod(path, int(arg, 8))
        else:
            os.rename(path, root / arg)
    except OSError:
        pass  # an impossible step (a parent is a file, a rename into itself): skipped


@given(
    steps=st.lists(st.lists(ops, min_size=1, max_size=4), min_size=1, max_size=4),
    initial=st.lists(ops, max_size=6),
    picks=st.tuples(st.integers(0, 10), st.integers(0, 10)),
)
# A link to a path below itself: its paths are reached only through the link (never read).
@example(
    steps=[[("delete", "c", ""), ("write", "c/a", "")]],
    initial=[("link", "c", "c/a")],
    picks=(0, 0),
)
def test_revert_to_any_checkpoint_and_redo_are_exact(
    steps: list[list[Op]], initial: list[Op], picks: tuple[int, int]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        for op in initial:
            apply(root, op)
        store = CheckpointStore(Path(tmp) / "store", root)
        ids, states = [], []
        for number, step in enumerate(steps, 1):
            ids.append(store.checkpoint(f"step {number}", step=number).id)
            states.append(tree(root))
            for op in step:
                apply(root, op)
            store.checkpoint(f"step {number} ended", kind=AFTER)
        end = tree(root)
        (root / "user-notes").write_text("the user's own\n")
        user = {"user-notes": tree(root)["user-notes"]}

        first = picks[0] % len(ids)
        result = store.revert(ids[first])
        assert tree(root) == states[first] | user
        assert result.kept == [] and result.not_restorable == []
        store.redo()
        assert tree(root) == end | user
        second = picks[1] % len(ids)
        store.revert(ids[second])
        assert tree(root) == states[second] | user
