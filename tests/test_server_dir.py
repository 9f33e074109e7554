"""The server's own folder `.plan-lsp/`: plans directory location, tool refusals, revisions
written without following links, and a state database never kept (or written) in it."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

import pytest

from plan_lsp.policy.plan_paths import plan_file_problem, write_plan_file
from plan_lsp.policy.safe_fs import WriteRefused
from plan_lsp.policy.server_dir import (
    PlansDir,
    ensure_plans_dir,
    locate_plans_dir,
    plans_dir_once_made,
    server_dir_refusal,
    write_revision,
)
from plan_lsp.session import StateStore


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    run = root / "src" / "run.sh"
    run.write_text("#!/bin/sh\necho run\n")
    run.chmod(0o755)
    return root.resolve()


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_locate_plans_dir(ws: Path) -> None:
    located = locate_plans_dir(ws / ".plan-lsp" / "plans", ws)
    assert located == PlansDir(ws, (".plan-lsp", "plans"))
    assert locate_plans_dir(ws / ".plan-lsp" / "plans") == located  # workspace inferred
    assert isinstance(locate_plans_dir(ws / "plans", ws), str)
    assert isinstance(locate_plans_dir(ws / "plans"), str)


def test_ensure_plans_dir_creates_real_folders_only(ws: Path) -> None:
    path = ensure_plans_dir(ws / ".plan-lsp" / "plans", ws)
    assert path == ws / ".plan-lsp" / "plans" and path.is_dir() and not path.is_symlink()
    (ws / ".plan-lsp" / "plans").rmdir()
    (ws / ".plan-lsp" / "plans").symlink_to(ws / "src")
    with pytest.raises(WriteRefused, match="symbolic link"):
        ensure_plans_dir(ws / ".plan-lsp" / "plans", ws)


@pytest.mark.parametrize(
    "relative",
    [".plan-lsp/state.db", ".plan-lsp/config.toml", ".plan-lsp/plans/PLAN.md",
     ".plan-lsp/revisions/PLAN.rev1.md", ".plan-lsp", ".Plan-LSP/config.toml"],
)  # fmt: skip
def test_server_dir_refusal(ws: Path, relative: str) -> None:
    reason = server_dir_refusal(ws / relative, [ws])
    assert reason is not None and reason.startswith(relative)
    assert server_dir_refusal(ws / "src" / "run.sh", [ws]) is None
    assert server_dir_refusal(ws / "src" / ".plan-lsp" / "x", [ws]) is None  # only the root's


def test_revisions_are_read_only_and_rewritten_only_when_changed(ws: Path) -> None:
    previous = os.umask(0o022)
    try:
        path = write_revision(ws, 1, "# v1\n")
    finally:
        os.umask(previous)
    assert path == ws / ".plan-lsp" / "revisions" / "PLAN.rev1.md"
    assert path.read_text() == "# v1\n" and mode_of(path) == 0o444
    inode = path.stat().st_ino
    assert write_revision(ws, 1, "# v1\n") == path and path.stat().st_ino == inode
    write_revision(ws, 1, "# v1 edited\n")
    assert path.read_text() == "# v1 edited\n" and mode_of(path) == 0o444


def test_a_symlinked_revision_never_touches_its_target(ws: Path) -> None:
    revisions = ws / ".plan-lsp" / "revisions"
    revisions.mkdir(parents=True)
    run = ws / "src" / "run.sh"
    (revisions / "PLAN.rev1.md").symlink_to(run)
    with pytest.raises(WriteRefused, match=r"PLAN\.rev1\.md is a symbolic link"):
        write_revision(ws, 1, "# v1\n")
    assert run.read_text() == "#!/bin/sh\necho run\n" and mode_of(run) == 0o755


@pytest.mark.parametrize("link_at", [".plan-lsp", ".plan-lsp/revisions"])
def test_a_symlinked_revisions_folder_is_refused(ws: Path, link_at: str) -> None:
    (ws / ".plan-lsp").mkdir(exist_ok=link_at != ".plan-lsp")
    if link_at == ".plan-lsp":
        (ws / ".plan-lsp").rmdir()
    (ws / link_at).symlink_to(ws / "src")
    with pytest.raises(WriteRefused, match=f"{link_at} is a symbolic link"):
        write_revision(ws, 1, "# v1\n")
    assert sorted(p.name for p in (ws / "src").iterdir()) == ["run.sh"]


def test_a_fifo_revision_is_refused_without_blocking(ws: Path) -> None:
    (ws / ".plan-lsp" / "revisions").mkdir(parents=True)
    os.mkfifo(ws / ".plan-lsp" / "revisions" / "PLAN.rev2.md")
    with pytest.raises(WriteRefused, match="FIFO"):
        write_revision(ws, 2, "# v2\n")


def test_write_plan_file(ws: Path) -> None:
    plans = ws / ".plan-lsp" / "plans"
    written = write_plan_file(plans, plans / "sub" / "PLAN.md", "# plan\n", workspace=ws)
    assert written.created and (plans / "sub" / "PLAN.md").read_text() == "# plan\n"
    for bad in (plans / "notes.txt", plans / ".hidden.md", ws / "src" / "x.md"):
        assert plan_file_problem(plans, bad, workspace=ws) is not None
        with pytest.raises(WriteRefused, match=r"^Access denied: "):
            write_plan_file(plans, bad, "x", workspace=ws)
    (plans / "PLAN.md").symlink_to(ws / "src" / "run.sh")
    with pytest.raises(WriteRefused, match="outside the plans directory"):
        write_plan_file(plans, plans / "PLAN.md", "x", workspace=ws)
    assert (ws / "src" / "run.sh").read_text() == "#!/bin/sh\necho run\n"


# -- the state database is not the workspace's --------------------------------------------


@pytest.mark.parametrize("setup", ["dir-link", "db-link", "wal-link", "db-hardlink", "db-fifo"])
def test_a_state_file_in_the_workspace_pointing_elsewhere_is_never_written(
    ws: Path, setup: str
) -> None:
    """State lives in the user's state folder: whatever `.plan-lsp/state.db` a repository
    lays out (a link, a hard link to one of its files, a FIFO) is never written through,
    and the session is saved."""
    empty = ws / "src" / "__init__.py"
    empty.write_text("")
    server = ws / ".plan-lsp"
    if setup == "dir-link":
        server.symlink_to(ws / "src")
    else:
        server.mkdir()
    if setup == "db-link":
        (server / "state.db").symlink_to(empty)
    elif setup == "wal-link":
        (server / "state.db-wal").symlink_to(empty)
    elif setup == "db-hardlink":
        os.link(empty, server / "state.db")
    elif setup == "db-fifo":
        os.mkfifo(server / "state.db")
    before = sorted(p.name for p in server.iterdir())
    warnings: list[str] = []
    store = StateStore.for_workspace(ws, warn=warnings.append)
    store.save("s1", str(ws), {"mode": "plan"})
    assert store.persistent and not store.path.is_relative_to(ws)
    store.close()
    assert empty.read_bytes() == b""  # SQLite never wrote into the repository's file
    assert sorted(p.name for p in (ws / "src").iterdir()) == ["__init__.py", "run.sh"]
    assert sorted(p.name for p in server.iterdir()) == before
    assert all("ignored" in w for w in warnings)


# -- the plans watch makes no folder ---------------------------------------------------------


async def test_the_plans_watch_makes_nothing_while_there_is_no_plans_dir(ws: Path) -> None:
    stop = asyncio.Event()
    stop.set()
    assert await plans_dir_once_made(ws / ".plan-lsp" / "plans", ws, stop) is None
    assert not (ws / ".plan-lsp").exists()


async def test_the_plans_watch_finds_the_plans_dir_once_it_is_made(ws: Path) -> None:
    stop = asyncio.Event()
    found = asyncio.ensure_future(plans_dir_once_made(ws / ".plan-lsp" / "plans", ws, stop))
    await asyncio.sleep(0)  # it runs up to its watch (found the same if the watch is late)
    assert not found.done() and not (ws / ".plan-lsp").exists()
    (ws / ".plan-lsp").mkdir()
    (ws / ".plan-lsp" / "plans").mkdir()
    try:
        assert await asyncio.wait_for(found, 60) == ws.resolve() / ".plan-lsp" / "plans"
    finally:
        stop.set()


async def test_the_plans_watch_refuses_a_linked_server_folder(ws: Path) -> None:
    (ws / ".plan-lsp").symlink_to(ws / "src")
    (ws / "src" / "plans").mkdir()
    with pytest.raises(WriteRefused, match="symbolic link"):
        await plans_dir_once_made(ws / ".plan-lsp" / "plans", ws, asyncio.Event())
