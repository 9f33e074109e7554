"""A process killed (SIGKILL) at any write of a revert or a redo: the next open of the store
finishes it from its journal, so the workspace is either untouched (killed before the plan
was written) or exactly the target state, never half-restored; the user's own edit survives
and redo still goes back to the end state byte for byte."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from plan_lsp.session.checkpoints import AFTER, CheckpointStore
from plan_lsp.session.checkpoints.model import REDO, REVERT
from plan_lsp.session.checkpoints.restore import KILL_AT_VARIABLE
from tests.checkpoint_trees import State, remove, tree

pytestmark = pytest.mark.process

CHILD = """
import sys
from pathlib import Path
from plan_lsp.session.checkpoints import CheckpointStore
store = CheckpointStore(Path(sys.argv[1]), Path(sys.argv[2]))
store.revert(sys.argv[4]) if sys.argv[3] == "revert" else store.redo()
"""


def scenario(base: Path) -> tuple[CheckpointStore, str, State, State]:
    """A run that edits, deletes, creates, renames, changes modes and types; then the user
    writes a file of their own. Returns the store, the first checkpoint, its tree, the tree
    now."""
    ws = base / "ws"
    (ws / "src" / "deep").mkdir(parents=True)
    for name in ("a.py", "b.py", "deep/c.py"):
        (ws / "src" / name).write_text(f"{name}\n" * 20)
    (ws / "run.sh").write_text("#!/bin/sh\n")
    os.symlink("src/a.py", ws / "link")
    store = CheckpointStore(base / "store", ws)
    first = store.checkpoint("step 1", step=1)
    start = tree(ws)
    (ws / "src" / "a.py").write_text("rewritten\n")
    os.rename(ws / "src" / "b.py", ws / "src" / "renamed.py")
    remove(ws / "src" / "deep")
    (ws / "src" / "deep").write_text("a file now\n")
    os.chmod(ws / "run.sh", 0o755)
    remove(ws / "link")
    (ws / "link").mkdir()
    (ws / "link" / "inside").write_text("x\n")
    (ws / "new" / "folder").mkdir(parents=True)
    (ws / "new" / "folder" / "file").write_text("new\n")
    store.checkpoint("step 1 ended", kind=AFTER)
    (ws / "mine.txt").write_text("the user's\n")
    return store, first.id, start, tree(ws)


def child(base: Path, action: str, target: str, kill_at: int) -> int:
    env = {**os.environ, KILL_AT_VARIABLE: str(kill_at)}
    argv = [sys.executable, "-c", CHILD, str(base / "store"), str(base / "ws"), action, target]
    return subprocess.run(argv, env=env, capture_output=True, timeout=60).returncode


@pytest.mark.parametrize("action", ["revert", "redo"])
def test_sigkill_at_every_write_then_reopen_is_consistent(tmp_path: Path, action: str) -> None:
    kills = 0
    for kill_at in range(1, 200):
        base = tmp_path / f"{action}-{kill_at}"
        store, first, start, now = scenario(base)
        mine = {"mine.txt": now["mine.txt"]}
        if action == "redo":
            store.revert(first)
            assert tree(base / "ws") == start | mine
        code = child(base, action, first, kill_at)
        reopened = CheckpointStore(base / "store", base / "ws")
        assert not (base / "store" / "journal.json").exists()
        done = reopened.list()[-1].kind == (REVERT if action == "revert" else REDO)
        before, after = (now, start | mine) if action == "revert" else (start | mine, now)
        assert tree(base / "ws") == (after if done else before), (kill_at, code)
        if code == 0:
            break
        assert code == -signal.SIGKILL, code
        kills += 1
        if done and action == "revert":
            reopened.redo()
            assert tree(base / "ws") == now
    # every write was a kill point: the journal, each step of each path, the index
    assert kills >= 20
