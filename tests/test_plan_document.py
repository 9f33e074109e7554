"""Plan document storage: atomic writes, exact reads, line splitting."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from plan_lsp.plan import document
from plan_lsp.plan.document import (
    atomic_write_text,
    fenced_code_mask,
    plans_dir_for,
    read_plan,
    split_lines,
)


def test_constants() -> None:
    assert document.MAX_PLAN_CHARS == 50_000
    assert document.DEFAULT_PLAN_NAME == "PLAN.md"
    assert plans_dir_for(Path("/ws")) == Path("/ws/.plan-lsp/plans")


def test_write_then_read_is_exact(tmp_path: Path) -> None:
    path = tmp_path / "plans" / "sub" / "PLAN.md"
    text = "# Plan 計画 😀\r\n1. a\r2. b\n"
    atomic_write_text(path, text)
    assert read_plan(path) == text
    assert path.read_bytes() == text.encode("utf-8")
    assert [p.name for p in path.parent.iterdir()] == ["PLAN.md"]  # no temp left


def test_overwrite_keeps_mode(tmp_path: Path) -> None:
    path = tmp_path / "PLAN.md"
    path.write_text("old")
    path.chmod(0o600)
    atomic_write_text(path, "new")
    assert read_plan(path) == "new"
    assert path.stat().st_mode & 0o777 == 0o600


def test_failed_write_leaves_old_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "PLAN.md"
    path.write_text("old plan")

    def broken_replace(src: str, dst: object) -> None:
        raise OSError("disk on fire")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk on fire"):
        atomic_write_text(path, "new plan")
    assert read_plan(path) == "old plan"
    assert [p.name for p in tmp_path.iterdir()] == ["PLAN.md"]


def test_read_missing_or_not_a_file(tmp_path: Path) -> None:
    assert read_plan(tmp_path / "none.md") is None
    assert read_plan(tmp_path) is None


def test_split_lines_round_trips() -> None:
    for text in ("", "a", "a\n", "a\r\nb\rc\n\n", "x\u2028y\x0cz"):
        lines = split_lines(text)
        assert "".join(lines) == text
    assert split_lines("a\r\nb\rc") == ["a\r\n", "b\r", "c"]
    assert split_lines("x\u2028y") == ["x\u2028y"]


def test_fenced_code_mask() -> None:
    lines = split_lines("a\n```py\ncode\n~~~\n```\nb\n~~~~\n```\n~~~~\nc\n")
    assert fenced_code_mask(lines) == [
        False,
        True,
        True,
        True,
        True,
        False,
        True,
        True,
        True,
        False,
    ]
