"""The checkpoint store (plan_lsp/session/checkpoints): record, diff, revert only what the
run changed, merge or keep the user's own edits, redo byte for byte, ignored trees, the size
cap, bad input (unknown/foreign ids, corrupt or unwritable store), two sessions on one folder,
pruning. Trees are compared as plain values (tests/checkpoint_trees.py)."""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

import pytest

from plan_lsp.session.checkpoints import (
    AFTER,
    CheckpointError,
    CheckpointStore,
    CorruptStore,
    ForeignCheckpoint,
    StoreUnavailable,
    UnknownCheckpoint,
    scanner,
)
from plan_lsp.session.checkpoints.ignore import IgnoreRules, parse
from plan_lsp.session.checkpoints.merge import line_counts, merge3
from tests.checkpoint_trees import files_below, remove, tree


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("one\ntwo\nthree\nfour\nfive\nsix\n")
    (root / "README").write_text("read me\n")
    (root / "tool.sh").write_text("#!/bin/sh\n")
    os.chmod(root / "tool.sh", 0o755)
    os.symlink("README", root / "link")
    return root


def store_of(ws: Path, name: str = "store", **kw: int) -> CheckpointStore:
    return CheckpointStore(ws.parent / name, ws, **kw)  # type: ignore[arg-type]


def test_revert_restores_every_kind_of_change_and_redo_goes_forward(ws: Path) -> None:
    store = store_of(ws)
    first = store.checkpoint("step 1", step=1, tool_call_id="call-1")
    start = tree(ws)
    (ws / "src" / "app.py").write_text("one\nTWO\nthree\nfour\nfive\nsix\nseven\n")
    os.chmod(ws / "tool.sh", 0o644)
    remove(ws / "README")
    (ws / "README").mkdir()  # file -> folder
    (ws / "README" / "inner").write_text("x")
    remove(ws / "src")
    os.symlink("elsewhere", ws / "src")  # folder -> link
    remove(ws / "link")
    (ws / "link").write_text("now a file\n")  # link -> file
    (ws / "new.txt").write_text("new\n")
    end = store.checkpoint("done", kind=AFTER)
    assert {(f.path, f.status) for f in end.files} >= {
        ("README", "type"), ("README/inner", "added"), ("link", "type"), ("new.txt", "added"),
        ("src", "type"), ("src/app.py", "deleted"), ("tool.sh", "mode"),
    }  # fmt: skip
    assert store.diff(first.id, end.id) == list(end.files)
    finished = tree(ws)
    result = store.revert(first.id)
    assert tree(ws) == start
    assert result.kept == [] and result.not_restorable == []
    assert {"README", "src/app.py", "link", "new.txt", "tool.sh"} <= set(result.restored)
    store.redo()
    assert tree(ws) == finished
    with pytest.raises(CheckpointError, match="nothing to redo"):
        store.redo()


def test_line_counts_of_each_checkpoint(ws: Path) -> None:
    store = store_of(ws)
    store.checkpoint("start")
    (ws / "src" / "app.py").write_text("one\nTWO\nthree\nfour\nfive\nsix\nseven\n")
    cp = store.checkpoint("edit", step=2, tool_call_id="c2")
    assert [(f.path, f.added, f.removed) for f in cp.files] == [("src/app.py", 2, 1)]
    assert (cp.step, cp.tool_call_id) == (2, "c2")
    assert [c.id for c in store.list()] == [c.id for c in store_of(ws).list()]


def test_the_users_own_changes_survive_merge_or_are_kept(ws: Path) -> None:
    store = store_of(ws)
    first = store.checkpoint("step 1")
    app = ws / "src" / "app.py"
    app.write_text("ONE\ntwo\nthree\nfour\nfive\nsix\n")  # run: line 1
    (ws / "README").write_text("run's readme\n")
    store.checkpoint("after", kind=AFTER)
    app.write_text("ONE\ntwo\nthree\nfour\nfive\nSIX\n")  # user: line 6 (does not touch)
    (ws / "README").write_text("user's readme\n")  # user: same line as the run
    (ws / "notes").write_text("user's notes\n")  # user: a file the run never touched
    result = store.revert(first.id)
    assert app.read_text() == "one\ntwo\nthree\nfour\nfive\nSIX\n"
    assert result.merged == ["src/app.py"]
    assert (ws / "README").read_text() == "user's readme\n"
    assert [k.path for k in result.kept] == ["README"] and "overlap" in result.kept[0].why
    assert (ws / "notes").read_text() == "user's notes\n"


def test_a_user_edit_between_tool_calls_is_not_the_runs(ws: Path) -> None:
    store = store_of(ws)
    first = store.checkpoint("call 1")
    (ws / "README").write_text("run\n")
    store.checkpoint("call 1 ended", kind=AFTER)
    (ws / "tool.sh").write_text("#!/bin/sh\necho user\n")  # between tool calls: the user's
    store.checkpoint("call 2")
    (ws / "new").write_text("run\n")
    store.checkpoint("call 2 ended", kind=AFTER)
    result = store.revert(first.id)
    assert sorted(result.restored) == ["README", "new"]
    assert (ws / "tool.sh").read_text() == "#!/bin/sh\necho user\n"


def test_two_sessions_on_one_folder_each_restore_only_their_run(ws: Path) -> None:
    a, b = store_of(ws, "a"), store_of(ws, "b")
    a0 = a.checkpoint("a starts")
    (ws / "a.txt").write_text("a\n")
    a.checkpoint("a wrote", kind=AFTER)
    b0 = b.checkpoint("b starts")
    (ws / "b.txt").write_text("b\n")
    (ws / "README").write_text("b's readme\n")
    b.checkpoint("b wrote", kind=AFTER)
    a.checkpoint("a again")
    (ws / "src" / "app.py").write_text("a's\n")
    a.checkpoint("a wrote again", kind=AFTER)
    assert sorted(a.revert(a0.id).restored) == ["a.txt", "src/app.py"]
    assert (ws / "b.txt").exists() and (ws / "README").read_text() == "b's readme\n"
    assert sorted(b.revert(b0.id).restored) == ["README", "b.txt"]
    assert not (ws / "a.txt").exists() and (ws / "README").read_text() == "read me\n"
    with pytest.raises(ForeignCheckpoint, match="not one of this session's"):
        b.revert(a0.id)


def test_unknown_ids_are_refused_and_nothing_changes(ws: Path) -> None:
    store = store_of(ws)
    cp = store.checkpoint("one")
    before = tree(ws)
    with pytest.raises(UnknownCheckpoint, match="never made, or pruned"):
        store.revert(cp.id.rsplit("-", 1)[0] + "-99")
    with pytest.raises(ForeignCheckpoint):
        store.revert("garbage")
    assert tree(ws) == before


def test_ignored_trees_are_skipped_unless_the_run_touches_them(ws: Path) -> None:
    (ws / ".gitignore").write_text("build/\n*.log\n!keep.log\n")
    (ws / "node_modules" / "pkg").mkdir(parents=True)
    (ws / "node_modules" / "pkg" / "index.js").write_text("x")
    (ws / "build").mkdir()
    (ws / "build" / "out.o").write_text("old object\n")
    (ws / "keep.log").write_text("kept\n")
    store = store_of(ws)
    first = store.checkpoint("start", touched=["build/out.o"])
    skipped = dict(first.skipped)
    assert skipped == {"node_modules": "ignored (.gitignore)"}  # build/ walked for out.o
    (ws / "build" / "out.o").write_text("new object\n")
    (ws / "build" / "other.o").write_text("not touched by a tool\n")
    (ws / "keep.log").write_text("changed\n")
    (ws / "node_modules" / "pkg" / "index.js").write_text("y")
    store.checkpoint("end", kind=AFTER)
    result = store.revert(first.id)
    assert (ws / "build" / "out.o").read_text() == "old object\n"
    assert (ws / "keep.log").read_text() == "kept\n"
    assert (ws / "build" / "other.o").exists()  # ignored, never recorded: left alone
    assert (ws / "node_modules" / "pkg" / "index.js").read_text() == "y"
    assert sorted(result.restored) == ["build/out.o", "keep.log"]


def test_a_path_first_touched_later_is_not_restorable_to_before(ws: Path) -> None:
    (ws / ".gitignore").write_text("dist/\n")
    (ws / "dist").mkdir()
    store = store_of(ws)
    first = store.checkpoint("start")
    store.checkpoint("write dist/a", touched=["dist/a"])
    (ws / "dist" / "a").write_text("a")
    store.checkpoint("end", kind=AFTER)
    result = store.revert(first.id)
    assert [(k.path, k.why) for k in result.not_restorable] == [
        ("dist/a", "not recorded at that checkpoint: ignored (.gitignore)")
    ]
    assert (ws / "dist" / "a").exists()


def test_files_over_the_cap_and_unreadable_files_are_listed_not_recorded(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (ws / "big.bin").write_bytes(b"x" * 2048)
    real_read = scanner.read_file

    def read(path: str) -> bytes:
        if path.endswith("secret"):
            raise PermissionError(errno.EACCES, "Permission denied")
        return real_read(path)

    (ws / "secret").write_text("s")
    monkeypatch.setattr(scanner, "read_file", read)
    store = store_of(ws, max_file_bytes=1024)
    first = store.checkpoint("start")
    skipped = dict(first.skipped)
    assert skipped["big.bin"] == "over the size cap (2,048 > 1,024 bytes)"
    assert skipped["secret"] == "unreadable (Permission denied)"
    (ws / "big.bin").write_bytes(b"y" * 2048)
    store.checkpoint("end", kind=AFTER)
    result = store.revert(first.id)
    assert [k.path for k in result.not_restorable] == ["big.bin"]
    assert (ws / "big.bin").read_bytes() == b"y" * 2048


def test_a_later_checkpoint_reads_only_changed_files(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(50):
        (ws / f"f{i}").write_text(f"{i}\n")
    for path in ws.rglob("*"):
        os.utime(path, (1_000_000_000, 1_000_000_000), follow_symlinks=False)
    store = store_of(ws)
    store.checkpoint("first")
    reads: list[str] = []
    real_read = scanner.read_file

    def counting(path: str) -> bytes:
        reads.append(path)
        return real_read(path)

    monkeypatch.setattr(scanner, "read_file", counting)
    (ws / "f7").write_text("changed\n")
    cp = store.checkpoint("second")
    assert [os.path.basename(p) for p in reads] == ["f7"]
    assert [f.path for f in cp.files] == ["f7"]


def test_a_corrupt_store_is_an_error_and_nothing_is_half_restored(ws: Path) -> None:
    store = store_of(ws)
    first = store.checkpoint("start")
    (ws / "README").write_text("changed\n")
    (ws / "src" / "app.py").write_text("changed\n")
    store.checkpoint("end", kind=AFTER)
    before = tree(ws)
    blob = store.blobs.path(store.manifest(first.id)["src/app.py"].ref)
    blob.write_bytes(blob.read_bytes()[:-3])
    with pytest.raises(CorruptStore, match=r"cannot be read|does not match"):
        store.revert(first.id)
    assert tree(ws) == before
    manifest = store.dir / "manifests" / first.id
    manifest.write_bytes(manifest.read_bytes()[:-10])
    with pytest.raises(CorruptStore, match="corrupt or truncated"):
        store_of(ws).diff(first.id, store.list()[-1].id)
    index = store.dir / "index.json"
    index.write_bytes(index.read_bytes()[:-1])
    with pytest.raises(CorruptStore, match=r"index\.json"):
        store_of(ws)
    assert tree(ws) == before


@pytest.mark.parametrize(
    ("code", "message"),
    [(errno.ENOSPC, "No space left on device"), (errno.EROFS, "Read-only file system")],
)
def test_a_full_or_read_only_disk_fails_the_checkpoint_clearly_and_the_store_goes_on(
    ws: Path, monkeypatch: pytest.MonkeyPatch, code: int, message: str
) -> None:
    store = store_of(ws)
    store.checkpoint("start")
    (ws / "README").write_text("changed\n")

    def full(*_a: object, **_k: object) -> None:
        raise OSError(code, message)

    with monkeypatch.context() as patch:
        patch.setattr(os, "replace", full)
        with pytest.raises(StoreUnavailable, match=message):
            store.checkpoint("fails")
    assert len(store.list()) == 1
    cp = store.checkpoint("works again")
    assert [f.path for f in cp.files] == ["README"]
    assert [c.label for c in store_of(ws).list()] == ["start", "works again"]


def test_a_store_deleted_under_an_open_session_is_an_error_and_nothing_changes(ws: Path) -> None:
    store = store_of(ws)
    first = store.checkpoint("start")
    (ws / "README").write_text("changed\n")
    store.checkpoint("end", kind=AFTER)
    before = tree(ws)
    remove(store.dir)
    with pytest.raises(CorruptStore, match="is missing"):
        store.revert(first.id)
    assert tree(ws) == before
    with pytest.raises(ForeignCheckpoint):  # a new, empty store knows no old id
        store_of(ws).revert(first.id)


def test_a_store_that_cannot_be_made_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(StoreUnavailable, match="checkpoint store"):
        CheckpointStore(tmp_path / "file" / "store", tmp_path)


def test_prune_keeps_the_last_runs_and_drops_unneeded_contents(ws: Path) -> None:
    store = store_of(ws)
    for run in range(3):
        store.checkpoint(f"run {run}", run=f"r{run}")
        (ws / "data").write_bytes(os.urandom(50_000))
        store.checkpoint(f"run {run} end", run=f"r{run}", kind=AFTER)
    size = store.space()
    kept_first = store.list()[4]
    result = store.prune(keep_runs=1)
    # run 1's data is still the state at run 2's first checkpoint: only run 0's goes
    assert result.removed == 4 and 50_000 < result.freed_bytes < 60_000
    assert store.space() < size
    assert [c.run for c in store.list()] == ["r2", "r2"]
    expected = store.manifest(kept_first.id)
    assert store_of(ws).manifest(kept_first.id) == expected
    store.checkpoint("r2 more", run="r2")
    (ws / "data").write_text("later")
    store.checkpoint("r2 more ended", run="r2", kind=AFTER)
    store.revert(kept_first.id)
    assert tree(ws)["data"] == ("file", 0o644, expected["data"].ref)
    store.checkpoint("r3", run="r3")
    assert store.prune(max_bytes=1).removed > 0 and {c.run for c in store.list()} == {"r3"}


@pytest.mark.process
def test_the_users_git_repository_is_unchanged_byte_for_byte(ws: Path) -> None:
    def git(*args: str) -> None:
        env = {**os.environ, "GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@x",
               "GIT_COMMITTER_NAME": "u", "GIT_COMMITTER_EMAIL": "u@x"}  # fmt: skip
        subprocess.run(["git", *args], cwd=ws, check=True, capture_output=True, env=env)

    git("init", "-q")
    git("add", "-A")
    git("commit", "-q", "-m", "first")
    (ws / "README").write_text("staged\n")
    git("add", "README")
    (ws / "sub").mkdir()
    (ws / "sub" / ".git").write_text("gitdir: ../.git/modules/sub\n")
    git_before, sub_before = files_below(ws / ".git"), (ws / "sub" / ".git").read_bytes()
    store = store_of(ws)
    first = store.checkpoint("start")
    (ws / "src" / "app.py").write_text("changed by the run\n")
    (ws / "sub" / "made").write_text("by the run\n")
    store.checkpoint("end", kind=AFTER)
    store.revert(first.id)
    store.redo()
    store.revert(first.id)
    assert files_below(ws / ".git") == git_before
    assert (ws / "sub" / ".git").read_bytes() == sub_before
    assert not any(p.startswith(".git") for p in store.manifest(first.id))


def test_merge3_table() -> None:
    base = b"a\nb\nc\nd\ne\n"
    cases = [
        (b"A\nb\nc\nd\ne\n", b"a\nb\nc\nd\nE\n", b"A\nb\nc\nd\nE\n"),  # apart: both
        (b"A\nb\nc\nd\ne\n", b"A\nb\nc\nd\ne\n", b"A\nb\nc\nd\ne\n"),  # the same change
        (b"a\nB\nc\nd\ne\n", b"a\nb\nC\nd\ne\n", None),  # adjacent lines touch
        (b"a\nB\nc\nd\ne\n", b"a\nX\nc\nd\ne\n", None),  # the same line
        (b"a\nb\nc\nd\ne\nf\n", b"z\na\nb\nc\nd\ne\n", b"z\na\nb\nc\nd\ne\nf\n"),  # ends
        (b"a\0b", b"a\nb\nc\nd\ne\n", None),  # not text
    ]
    for ours, theirs, expected in cases:
        assert merge3(base, ours, theirs) == expected, (ours, theirs)
    assert line_counts(b"a\nb\n", b"a\nc\nd\n") == (2, 1)
    assert line_counts(None, b"a\n") == (1, 0) and line_counts(b"\0", b"a") == (0, 0)


@pytest.mark.parametrize(
    ("rules", "path", "is_dir", "ignored"),
    [
        ("build/", "build", True, True),
        ("build/", "build", False, False),
        ("build/", "src/build", True, True),
        ("/build", "src/build", True, False),
        ("*.log", "a/b/c.log", False, True),
        ("*.log\n!keep.log", "keep.log", False, False),
        ("docs/*.md", "docs/a.md", False, True),
        ("docs/*.md", "docs/x/a.md", False, False),
        ("**/gen", "a/b/gen", True, True),
        ("a/**/z", "a/b/c/z", False, True),
        ("file[0-9].txt", "file7.txt", False, True),
        ("\\#hash", "#hash", False, True),
        ("# comment", "# comment", False, False),
        ("", "__pycache__", True, True),  # the defaults
    ],
)
def test_gitignore_rules(rules: str, path: str, is_dir: bool, ignored: bool) -> None:
    assert IgnoreRules(IgnoreRules.for_root(Path("/nonexistent")).rules + parse(rules, "")).ignored(
        path, is_dir
    ) is ignored  # fmt: skip


def test_nested_gitignore_applies_below_its_folder(ws: Path) -> None:
    (ws / "src" / ".gitignore").write_text("*.tmp\n")
    (ws / "src" / "x.tmp").write_text("")
    (ws / "y.tmp").write_text("")
    skipped = dict(store_of(ws).checkpoint("one").skipped)
    assert "src/x.tmp" in skipped and "y.tmp" not in skipped


def test_the_plans_folder_is_never_recorded_or_reverted(ws: Path) -> None:
    """`.plan-lsp/` at the root holds the plans plan-lsp writes itself (a plan's checklist
    is set by the revert through its todos); a half-written temporary file of a plan save
    caught by a checkpoint would show as a change of the step."""
    plans = ws / ".plan-lsp" / "plans"
    plans.mkdir(parents=True)
    (plans / "PLAN.md").write_text("- [ ] one\n")
    store = store_of(ws)
    first = store.checkpoint("start")
    (plans / "PLAN.md").write_text("- [x] one\n")
    (plans / ".plan-lsp-tmp-1.tmp").write_text("half")
    (ws / "sub").mkdir()
    (ws / "sub" / ".plan-lsp").write_text("a file of the user's, named so, deeper down\n")
    store.checkpoint("end", kind=AFTER)
    assert not any(p.startswith(".plan-lsp") for p in store.manifest(first.id))
    store.revert(first.id)
    assert (plans / "PLAN.md").read_text() == "- [x] one\n"
    assert (plans / ".plan-lsp-tmp-1.tmp").exists()
    assert not (ws / "sub").exists()
