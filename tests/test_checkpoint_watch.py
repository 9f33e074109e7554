"""A later checkpoint looks only at the folders the kernel says changed (inotify), and records
exactly what a full scan records: random sequences of file, folder, link and `.gitignore`
changes (hypothesis), each checkpoint compared with a full scan of the same tree; and the
folders listed by a later checkpoint after one change are that change's folder only."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plan_lsp.session.checkpoints import AFTER, CheckpointStore
from plan_lsp.session.checkpoints.ignore import IgnoreRules
from plan_lsp.session.checkpoints.scanner import Scan, scan
from plan_lsp.session.checkpoints.snapshot import BlobStore, load
from plan_lsp.session.checkpoints.watch import TreeWatch
from tests.needs import need


@pytest.fixture(autouse=True)
def _inotify() -> None:
    need(TreeWatch("/").active, "the kernel offers no inotify here")

NAMES = ["a", "b", "c"]
FOLDERS = ["", "d", "d/e", "f"]


def content(store: CheckpointStore) -> dict[str, tuple[str, int, str]]:
    return {p: (e.kind, e.mode, e.ref) for p, e in store.latest().items()}


def full_scan(root: Path, blobs: Path) -> dict[str, tuple[str, int, str]]:
    return {p: (e.kind, e.mode, e.ref) for p, e in _scan(root, blobs).entries.items()}


def full_scan_skipped(root: Path, blobs: Path) -> dict[str, str]:
    now = _scan(root, blobs)
    return now.skipped | {p: e.ref for p, e in now.entries.items() if e.kind == "x"}


def _scan(root: Path, blobs: Path) -> Scan:
    return scan(
        root, {}, BlobStore(blobs), ignore=IgnoreRules.for_root(root), max_file_bytes=1 << 20
    )


def apply(root: Path, op: tuple[str, str, str, int]) -> None:
    kind, folder, name, n = op
    where = root / folder
    if not where.is_dir() or where.is_symlink():
        return
    path = where / name
    try:
        if kind == "write":
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif path.is_symlink():
                path.unlink()
            path.write_text(f"text {n}\n")
        elif kind == "append" and path.is_file() and not path.is_symlink():
            with path.open("a") as handle:
                handle.write(f"more {n}\n")
        elif kind == "chmod" and path.is_file() and not path.is_symlink():
            os.chmod(path, 0o755 if n % 2 else 0o644)
        elif kind == "remove":
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif path.exists() or path.is_symlink():
                path.unlink()
        elif kind == "mkdir" and not path.exists() and not path.is_symlink():
            (path / "inner").mkdir(parents=True)
            (path / "inner" / "x").write_text(f"made {n}\n")
        elif kind == "link" and not path.exists() and not path.is_symlink():
            os.symlink(NAMES[n % 3], path)
        elif kind == "rename":
            target = root / FOLDERS[n % len(FOLDERS)] / NAMES[n % 3]
            if (path.exists() or path.is_symlink()) and not target.exists():
                if target.parent.is_dir() and not str(target).startswith(str(path) + "/"):
                    os.rename(path, target)
        elif kind == "ignore":
            (where / ".gitignore").write_text(f"{NAMES[n % 3]}\n")
    except OSError:
        pass  # a rename into a non-empty folder and the like: the tree is what it is


OPS = st.tuples(
    st.sampled_from(["write", "append", "chmod", "remove", "mkdir", "link", "rename", "ignore"]),
    st.sampled_from(FOLDERS),
    st.sampled_from(NAMES),
    st.integers(0, 9),
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    batches=st.lists(st.lists(OPS, min_size=1, max_size=5), min_size=1, max_size=6),
    read_ahead=st.booleans(),
)
def test_each_later_checkpoint_equals_a_full_scan(
    tmp_path_factory: pytest.TempPathFactory,
    batches: list[list[tuple[str, str, str, int]]],
    read_ahead: bool,
) -> None:
    """Every path and every skipped path, and the manifests as a new process reads them."""
    base = tmp_path_factory.mktemp("w")
    root = base / "ws"
    for folder in FOLDERS:
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / "a").write_text("start\n")
    store = CheckpointStore(base / "store", root)
    if read_ahead:
        store.prime()
        apply(root, batches[0][0])
    store.checkpoint("start")
    for batch in batches:
        for op in batch:
            apply(root, op)
        cp = store.checkpoint("later", kind=AFTER)
        assert content(store) == full_scan(root, base / "blobs")
        assert dict(cp.skipped) == full_scan_skipped(root, base / "blobs")
    reread = CheckpointStore(base / "store", root)
    assert reread.manifest(cp.id) == store.latest()


def test_a_later_checkpoint_lists_only_the_changed_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "ws"
    for i in range(20):
        (root / f"pkg{i}" / "sub").mkdir(parents=True)
        (root / f"pkg{i}" / "sub" / "m.py").write_text(f"{i}\n")
    store = CheckpointStore(tmp_path / "store", root)
    store.checkpoint("first")
    (root / "pkg7" / "sub" / "m.py").write_text("changed\n")
    listed: list[str] = []
    real = os.scandir

    def counting(path: str) -> object:
        listed.append(os.path.relpath(path, root))
        return real(path)

    monkeypatch.setattr(os, "scandir", counting)
    cp = store.checkpoint("later", kind=AFTER)
    assert listed == ["pkg7/sub"]
    assert [f.path for f in cp.files] == ["pkg7/sub/m.py"]
    # A new process has no watcher yet: its first checkpoint is a full scan.
    listed.clear()
    CheckpointStore(tmp_path / "store", root).checkpoint("resumed", kind=AFTER)
    assert len(listed) == 41


def test_a_file_ignored_after_it_was_recorded_is_skipped_like_a_new_one(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "build.log").write_text("log\n")
    store = CheckpointStore(tmp_path / "store", root)
    store.checkpoint("first")
    (root / ".gitignore").write_text("*.log\n")
    cp = store.checkpoint("later", kind=AFTER)
    assert "build.log" not in store.latest()
    assert ("build.log", "ignored (.gitignore)") in cp.skipped


def primed_store(tmp_path: Path) -> tuple[Path, CheckpointStore]:
    """Ten folders of one file each, read ahead (`prime`) and then pkg3/m.py changed."""
    root = tmp_path / "ws"
    for i in range(10):
        (root / f"pkg{i}").mkdir(parents=True)
        (root / f"pkg{i}" / "m.py").write_text(f"{i}\n")
    store = CheckpointStore(tmp_path / "store", root)
    store.prime()
    (root / "pkg3" / "m.py").write_text("changed before the run\n")
    return root, store


def test_read_ahead_makes_the_first_checkpoint_look_only_at_what_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`prime` (while the user reads the plan) records nothing; the Do run's first checkpoint
    then lists only the folders changed since, is whole, and a revert to it brings back
    contents read ahead (a prune in between keeps them)."""
    root, store = primed_store(tmp_path)
    assert store.list() == []
    store.prune(keep_runs=10)
    listed: list[str] = []
    real = os.scandir

    def counting(path: str) -> object:
        listed.append(os.path.relpath(path, root))
        return real(path)

    monkeypatch.setattr(os, "scandir", counting)
    first = store.checkpoint("before step 1")
    assert listed == ["pkg3"]
    assert content(store) == full_scan(root, tmp_path / "blobs")
    monkeypatch.undo()
    for i in range(10):
        (root / f"pkg{i}" / "m.py").write_text("the run's\n")
    store.checkpoint("after", kind=AFTER)
    store.revert(first.id)
    assert (root / "pkg3" / "m.py").read_text() == "changed before the run\n"
    assert [(root / f"pkg{i}" / "m.py").read_text() for i in (0, 9)] == ["0\n", "9\n"]


def test_the_first_checkpoint_after_a_read_ahead_stores_only_what_changed(tmp_path: Path) -> None:
    """Its manifest holds the one changed path on top of the read-ahead's; a new process reads
    the whole workspace back from both; a prune that drops it drops the read-ahead too."""
    root, store = primed_store(tmp_path)
    first = store.checkpoint("before step 1", run="one")
    body = load(tmp_path / "store" / "manifests" / first.id)
    assert list(body["changes"]) == ["pkg3/m.py"]
    assert body["base"].startswith("read-ahead-")
    whole = store.latest()
    assert CheckpointStore(tmp_path / "store", root).manifest(first.id) == whole
    (root / "pkg5" / "m.py").write_text("the next run's\n")
    store.checkpoint("before step 1", run="two")
    store.prune(keep_runs=1)
    assert not (tmp_path / "store" / "manifests" / body["base"]).exists()
    reread = CheckpointStore(tmp_path / "store", root)
    assert reread.latest() == store.latest()
    assert reread.latest()["pkg3/m.py"].ref == whole["pkg3/m.py"].ref
