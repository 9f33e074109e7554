"""Reads of a workspace's files outside the file tools: regular files only, never through a
link, never blocking (policy/safe_fs.py). Each case is a file a repository can ship."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from plan_lsp.policy.sandbox import git_config_hazards
from plan_lsp.protocol.state import Outcome
from plan_lsp.session import Session, StateStore
from plan_lsp.tools import edit
from tests.redteam._repos import git


def _returns_at_once(call: Callable[[], Any], what: Path) -> Any:
    """`call()` in a thread that must end within 10 s; a FIFO it blocked on is opened for
    writing afterwards so the test process can end either way."""
    result: list[Any] = []
    worker = threading.Thread(target=lambda: result.append(call()), daemon=True)
    worker.start()
    worker.join(10)
    if worker.is_alive():
        os.close(os.open(what, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail(f"reading {what} blocked")
    return result[0]


@pytest.mark.parametrize("kind", ["fifo", "link"])
def test_the_outcome_reads_the_plan_only_as_a_regular_file(tmp_path: Path, kind: str) -> None:
    ws = tmp_path / "ws"
    plans = ws / ".plan-lsp" / "plans"
    plans.mkdir(parents=True)
    outside = tmp_path / "other.md"
    outside.write_text("# Plan\n1. elsewhere\n")
    if kind == "fifo":
        os.mkfifo(plans / "PLAN.md")
    else:
        (plans / "PLAN.md").symlink_to(outside)
    session = Session(StateStore(ws / ".plan-lsp" / "state.db"), ws, plans)
    outcome = _returns_at_once(session.outcome, plans / "PLAN.md")
    assert outcome is Outcome.PLANNING_WITHOUT_PLAN
    session.store.close()


def test_an_edited_file_is_compared_without_following_a_link(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("text")
    (tmp_path / "link.txt").symlink_to(tmp_path / "a.txt")
    os.mkfifo(tmp_path / "pipe.txt")
    assert edit._disk_holds(tmp_path / "a.txt", "text")
    assert not edit._disk_holds(tmp_path / "link.txt", "text")
    assert not _returns_at_once(
        lambda: edit._disk_holds(tmp_path / "pipe.txt", ""), tmp_path / "pipe.txt"
    )


def test_git_alternates_as_a_fifo_is_a_hazard_not_a_hang(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", ".")
    alternates = repo / ".git" / "objects" / "info" / "alternates"
    alternates.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(alternates)
    hazards = _returns_at_once(lambda: git_config_hazards(repo), alternates)
    assert any("alternates cannot be checked" in h and "a FIFO" in h for h in hazards)
