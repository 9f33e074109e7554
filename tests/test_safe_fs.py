"""The one safe writer: atomic, anchored, never through a link, modes from the umask; and
its readers: regular files only, bounded, never through a link, never blocking.

Unit tests for each rule, then hypothesis properties over random trees of folders, files,
symbolic links, hard links and FIFOs: a write never changes anything but its own target
(below the anchor, reached without a link), and succeeds exactly when no link is on the way;
a read returns exactly what a link-free walk reaches, and never blocks.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from plan_lsp.policy.safe_fs import (
    TEMP_PREFIX,
    FileTooLarge,
    WriteRefused,
    disk_text,
    ensure_folder,
    link_problem,
    open_folder,
    open_regular,
    read_bytes,
    read_file_bytes,
    read_text,
    write_text,
)
from tests.fs_trees import NAMES, build_tree, clean_chain, snapshot, tree_ops


@pytest.fixture
def umask() -> Iterator[int]:
    """The process umask, fixed at 022 for the test (tests run in one thread)."""
    previous = os.umask(0o022)
    yield 0o022
    os.umask(previous)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    return root


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_write_then_read_is_exact_and_leaves_no_temp(ws: Path, umask: int) -> None:
    path = ws / "plans" / "sub" / "PLAN.md"
    text = "# Plan 計画 😀\r\n1. a\r2. b\n"
    written = write_text(ws, path, text)
    assert written.created and written.mode == 0o644
    assert path.read_bytes() == text.encode("utf-8")
    assert read_text(ws, path) == text
    assert [p.name for p in path.parent.iterdir()] == ["PLAN.md"]
    assert mode_of(ws / "plans") == mode_of(ws / "plans" / "sub") == 0o755
    again = write_text(ws, path, "second")
    assert not again.created and path.read_text() == "second"


@pytest.mark.parametrize(("mask", "expected"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_new_files_honour_the_umask(ws: Path, mask: int, expected: int) -> None:
    previous = os.umask(mask)
    try:
        write_text(ws, ws / "src" / "new.txt", "x")
        write_text(ws, ws / "fresh" / "dir" / "f.txt", "x")
    finally:
        os.umask(previous)
    assert mode_of(ws / "src" / "new.txt") == expected
    assert mode_of(ws / "fresh" / "dir") == 0o777 & ~mask


@pytest.mark.parametrize("old_mode", [0o755, 0o600, 0o640, 0o444, 0o000])
def test_existing_files_keep_their_mode(ws: Path, old_mode: int) -> None:
    path = ws / "src" / "run.sh"
    path.write_text("#!/bin/sh\n")
    path.chmod(old_mode)
    previous = os.umask(0o077)  # the umask does not narrow an existing file's mode
    try:
        written = write_text(ws, path, "#!/bin/sh\necho hi\n")
    finally:
        os.umask(previous)
    assert not written.created
    assert mode_of(path) == old_mode == written.mode
    assert path.read_text() == "#!/bin/sh\necho hi\n"


def test_set_id_bits_are_dropped_like_a_kernel_write(ws: Path) -> None:
    path = ws / "src" / "tool"
    path.write_text("x")
    path.chmod(0o4755)
    write_text(ws, path, "y")
    assert mode_of(path) == 0o755


def test_an_explicit_mode_is_asked_of_open_so_the_umask_applies(ws: Path) -> None:
    path = ws / "rev" / "PLAN.rev1.md"
    previous = os.umask(0o077)
    try:
        write_text(ws, path, "one", mode=0o444)
    finally:
        os.umask(previous)
    assert mode_of(path) == 0o400
    write_text(ws, path, "two", mode=0o444)  # a read-only file is replaced, not opened
    assert path.read_text() == "two"


def test_nothing_is_chmod_ed_by_path(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("chmod by path")

    monkeypatch.setattr(os, "chmod", refuse)
    monkeypatch.setattr(os, "lchmod", refuse, raising=False)
    path = ws / "src" / "run.sh"
    path.write_text("x")
    os.fchmod(os.open(path, os.O_RDONLY), 0o755)
    write_text(ws, path, "y")
    assert mode_of(path) == 0o755
    write_text(ws, ws / "src" / "ro.md", "y", mode=0o444)


def test_a_failed_replace_keeps_the_old_file_and_no_temp(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = ws / "src" / "PLAN.md"
    path.write_text("old plan")

    def broken_replace(*args: object, **kwargs: object) -> None:
        raise OSError("disk on fire")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk on fire"):
        write_text(ws, path, "new plan")
    assert path.read_text() == "old plan"
    assert [p.name for p in path.parent.iterdir()] == ["PLAN.md"]


def test_a_symlinked_target_is_refused_and_its_target_kept(ws: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.sh"
    victim.write_text("#!/bin/sh\n")
    victim.chmod(0o755)
    link = ws / "src" / "PLAN.md"
    link.symlink_to(victim)
    with pytest.raises(WriteRefused, match=r"src/PLAN.md is a symbolic link"):
        write_text(ws, link, "pwned")
    assert victim.read_text() == "#!/bin/sh\n" and mode_of(victim) == 0o755
    assert link.is_symlink()
    (ws / "src" / "dangling").symlink_to(tmp_path / "nothing-yet")
    with pytest.raises(WriteRefused, match="symbolic link"):
        write_text(ws, ws / "src" / "dangling", "pwned")
    assert not (tmp_path / "nothing-yet").exists()


@pytest.mark.parametrize("target", ["../..", "..", "/OUT"])
def test_a_symlinked_folder_on_the_way_is_refused(ws: Path, tmp_path: Path, target: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (ws / ".plan-lsp").mkdir()
    (ws / ".plan-lsp" / "plans").symlink_to(str(out) if target == "/OUT" else target)
    with pytest.raises(WriteRefused, match=r"^\.plan-lsp/plans is a symbolic link"):
        write_text(ws, ws / ".plan-lsp" / "plans" / "PLAN.md", "x")
    with pytest.raises(WriteRefused, match="symbolic link"):
        write_text(ws, ws / ".plan-lsp" / "plans" / "new" / "PLAN.md", "x")
    assert sorted(p.name for p in ws.iterdir()) == [".plan-lsp", "src"]
    assert list(out.iterdir()) == []


def test_the_anchor_itself_may_be_reached_through_a_link(tmp_path: Path, ws: Path) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(ws)
    write_text(alias, alias / "src" / "a.txt", "x")  # the anchor is trusted as given
    assert (ws / "src" / "a.txt").read_text() == "x"


def test_a_hard_linked_target_is_replaced_and_its_twin_kept(ws: Path, tmp_path: Path) -> None:
    twin = tmp_path / "twin.sh"
    twin.write_text("original")
    twin.chmod(0o755)
    os.link(twin, ws / "src" / "run.sh")
    write_text(ws, ws / "src" / "run.sh", "replaced")
    assert (ws / "src" / "run.sh").read_text() == "replaced"
    assert twin.read_text() == "original" and mode_of(twin) == 0o755
    assert twin.stat().st_nlink == 1
    assert mode_of(ws / "src" / "run.sh") == 0o755  # the name keeps the mode it had


@pytest.mark.parametrize("kind", ["fifo", "dir"])
def test_a_target_that_is_not_a_regular_file_is_refused(ws: Path, kind: str) -> None:
    path = ws / "src" / "thing"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    expected = "a FIFO" if kind == "fifo" else "a folder"
    with pytest.raises(WriteRefused, match=f"src/thing is {expected}, not a regular file"):
        write_text(ws, path, "x")
    with pytest.raises(WriteRefused, match=f"src/thing is {expected}"):
        read_bytes(ws, path)  # a FIFO does not block the read


def test_a_file_where_a_folder_should_be_is_refused(ws: Path) -> None:
    (ws / "src" / "file").write_text("x")
    with pytest.raises(WriteRefused, match=r"^src/file is a regular file, not a folder$"):
        write_text(ws, ws / "src" / "file" / "a.md", "x")


def test_files_named_like_temp_files_are_never_reused_or_removed(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = iter(["aaaa", "aaaa", "bbbb"])
    monkeypatch.setattr(secrets, "token_hex", lambda n: next(names))
    shipped = ws / "src" / f"{TEMP_PREFIX}aaaa.tmp"
    shipped.write_text("the repository's own file")
    write_text(ws, ws / "src" / "a.txt", "x")
    assert shipped.read_text() == "the repository's own file"
    assert sorted(p.name for p in (ws / "src").iterdir()) == [shipped.name, "a.txt"]
    shipped.unlink()
    (ws / "src" / f"{TEMP_PREFIX}aaaa.tmp").symlink_to(ws / "src" / "a.txt")
    names = iter(["aaaa", "cccc"])
    write_text(ws, ws / "src" / "b.txt", "y")
    assert (ws / "src" / "a.txt").read_text() == "x"


@pytest.mark.parametrize("name", ["../x", "a/../../x", "."])
def test_paths_leaving_the_anchor_are_refused(ws: Path, name: str) -> None:
    with pytest.raises(WriteRefused):
        write_text(ws, ws / name, "x")
    with pytest.raises(WriteRefused, match="is not inside"):
        write_text(ws / "src", ws / "other.txt", "x")


def test_text_that_is_not_utf8_is_refused(ws: Path) -> None:
    with pytest.raises(WriteRefused, match="UTF-8"):
        write_text(ws, ws / "a.txt", "lone \ud800 surrogate")
    assert not (ws / "a.txt").exists()


def test_reads(ws: Path, tmp_path: Path) -> None:
    assert read_bytes(ws, ws / "missing.txt") is None
    assert read_bytes(ws, ws / "no" / "such" / "dir.txt") is None
    (tmp_path / "secret").write_text("secret")
    (ws / "src" / "link").symlink_to(tmp_path / "secret")
    with pytest.raises(WriteRefused, match="symbolic link"):
        read_bytes(ws, ws / "src" / "link")
    (ws / "dirlink").symlink_to(tmp_path)
    with pytest.raises(WriteRefused, match="dirlink is a symbolic link"):
        read_bytes(ws, ws / "dirlink" / "secret")
    (ws / "src" / "bin").write_bytes(b"\xff\xfe")
    with pytest.raises(UnicodeDecodeError):
        read_text(ws, ws / "src" / "bin")


def test_ensure_folder_and_link_problem(ws: Path, tmp_path: Path) -> None:
    ensure_folder(ws, ws / ".plan-lsp" / "plans")
    assert (ws / ".plan-lsp" / "plans").is_dir()
    assert link_problem(ws, ws / ".plan-lsp" / "plans", folder=True) is None
    assert link_problem(ws, ws / ".plan-lsp" / "plans" / "new" / "x.md") is None
    (ws / ".plan-lsp" / "revisions").symlink_to(tmp_path)
    problem = link_problem(ws, ws / ".plan-lsp" / "revisions" / "PLAN.rev1.md")
    assert problem is not None and problem.startswith(".plan-lsp/revisions is a symbolic link")
    with pytest.raises(WriteRefused):
        ensure_folder(ws, ws / ".plan-lsp" / "revisions" / "x")
    assert list(tmp_path.glob("x")) == []
    (ws / "f").write_text("x")
    assert link_problem(ws, ws / "f", folder=True) == "f is a regular file, not a folder"
    assert (
        link_problem(ws, ws / ".plan-lsp", folder=False)
        == ".plan-lsp is a folder, not a regular file"
    )


# -- property: random trees ------------------------------------------------------------------


_TARGETS = st.lists(st.sampled_from(NAMES[:2]), min_size=1, max_size=3)


@contextlib.contextmanager
def _random_tree(ops: list[tuple[object, ...]]) -> Iterator[Path]:
    """A fresh folder holding `ws` and `out` with the tree `ops` built in them."""
    root = Path(tempfile.mkdtemp(prefix="safefs-"))
    try:
        (root / "ws").mkdir()
        (root / "out").mkdir()
        build_tree(root, ops)
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@settings(deadline=None)
@given(ops=tree_ops(), target=_TARGETS)
def test_writes_change_only_their_own_target_and_never_follow_a_link(
    ops: list[tuple[object, ...]], target: list[str]
) -> None:
    previous = os.umask(0o022)
    try:
        with _random_tree(ops) as root:
            _check_write(root, target)
    finally:
        os.umask(previous)


def _check_write(root: Path, target: list[str]) -> None:
    """A write into a random tree changes its target and nothing else, or is refused."""
    ws = root / "ws"
    before = snapshot(root)
    clean = clean_chain(ws, target)
    old = before.get("ws/" + "/".join(target))
    try:
        written = write_text(ws, ws.joinpath(*target), "NEW")
        ok = True
    except OSError:
        ok = False
    after = snapshot(root)
    assert ok == clean
    event(f"ok={ok} old={old[0] if old else None}")
    prefixes = {"ws/" + "/".join(target[:i]) for i in range(1, len(target))}
    goal = "ws/" + "/".join(target)
    for key in sorted(set(before) | set(after)):
        if before.get(key) == after.get(key):
            continue
        if key in prefixes and key not in before:
            assert after[key] == ("dir", 0o755)  # a folder made on the way
            continue
        assert ok and key == goal, f"{key} changed: {before.get(key)} -> {after.get(key)}"
        mode = 0o644 if old is None else old[2]
        assert after[key] == ("file", b"NEW", mode) and written.mode == mode
    assert not any(TEMP_PREFIX in key for key in after)


# -- reading a workspace's files -------------------------------------------------------------


def _special(path: Path, kind: str, tmp_path: Path) -> Iterator[None]:
    """Make `kind` at `path`: a link to a secret outside, a FIFO, a socket, a folder, or
    /dev/zero (a device that never ends) behind a link."""
    if kind == "link":
        (tmp_path / "secret").write_text("secret")
        path.symlink_to(tmp_path / "secret")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        yield
        server.close()
        return
    elif kind == "folder":
        path.mkdir()
    elif kind == "device-link":
        path.symlink_to("/dev/zero")
    yield


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("link", "is a symbolic link; the server never follows links where it reads"),
        ("fifo", "is a FIFO, not a regular file"),
        ("socket", "is a socket, not a regular file"),
        ("folder", "is a folder, not a regular file"),
        ("device-link", "is a symbolic link"),
    ],
)
def test_readers_refuse_anything_but_a_regular_file_at_once(
    ws: Path, tmp_path: Path, kind: str, said: str
) -> None:
    path = ws / "src" / "thing"
    for _ in _special(path, kind, tmp_path):
        with pytest.raises(WriteRefused, match=f"src/thing {said}"):
            read_bytes(ws, path)
        with pytest.raises(WriteRefused, match=said):
            read_file_bytes(path)
        with pytest.raises(WriteRefused, match=said), open_regular(ws, path, max_bytes=None):
            pass
        assert disk_text(path) is None


def test_readers_bound_the_size(ws: Path) -> None:
    path = ws / "src" / "big.txt"
    path.write_bytes(b"x" * 1000)
    assert read_bytes(ws, path, max_bytes=1000) == b"x" * 1000
    assert read_file_bytes(path, max_bytes=1000) == b"x" * 1000
    with pytest.raises(FileTooLarge, match=r"src/big\.txt is 1000 bytes, more than the 999"):
        read_bytes(ws, path, max_bytes=999)
    with pytest.raises(FileTooLarge):
        read_file_bytes(path, max_bytes=999)
    assert disk_text(path, max_bytes=999) is None
    with open_regular(ws, path, max_bytes=None) as handle:  # a streaming reader: no bound
        assert len(handle.read()) == 1000


def test_file_readers_on_missing_and_plain_files(ws: Path) -> None:
    assert read_file_bytes(ws / "missing") is None
    assert disk_text(ws / "missing") is None
    (ws / "src" / "a.txt").write_text("é\r\n")
    assert disk_text(ws / "src" / "a.txt") == "é\r\n"
    (ws / "src" / "bin").write_bytes(b"\xff")
    assert disk_text(ws / "src" / "bin") is None
    with pytest.raises(FileNotFoundError), open_regular(ws, ws / "src" / "missing"):
        pass


def test_open_folder_walks_without_links(ws: Path, tmp_path: Path) -> None:
    (ws / "src" / "a.txt").write_text("a")
    with open_folder(ws, ws / "src") as fd:
        assert os.listdir(fd) == ["a.txt"]
    with open_folder(ws, ws) as fd:
        assert os.listdir(fd) == ["src"]
    (ws / "out").symlink_to(tmp_path)
    with pytest.raises(WriteRefused, match="out is a symbolic link"), open_folder(ws, ws / "out"):
        pass


@settings(deadline=None)
@given(ops=tree_ops(), target=_TARGETS)
def test_reads_return_exactly_what_a_link_free_walk_reaches(
    ops: list[tuple[object, ...]], target: list[str]
) -> None:
    """Over trees with links (inside and out, dangling), hard links and FIFOs: a read
    returns the file's bytes when nothing but folders lead to a regular file, None when a
    part is missing, and is refused otherwise; it never blocks on a FIFO."""
    with _random_tree(ops) as root:
        ws = root / "ws"
        found = snapshot(root).get("ws/" + "/".join(target))
        clean = clean_chain(ws, target)
        try:
            data: bytes | None = read_bytes(ws, ws.joinpath(*target))
            ok = True
        except OSError:
            data, ok = None, False
        event(f"ok={ok} found={found[0] if found else None}")
        assert ok == clean
        if ok:
            assert data == (found[1] if found else None)
