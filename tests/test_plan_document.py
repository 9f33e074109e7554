"""The plan document: exact reads that never follow a link or block, line splitting.
(Writes are `policy.safe_fs`'s, tested in test_safe_fs.py.)"""

from __future__ import annotations

import os
from pathlib import Path

from plan_lsp.plan import document
from plan_lsp.plan.document import (
    fenced_code_mask,
    plans_dir_for,
    read_plan,
    split_lines,
)


def test_constants() -> None:
    assert document.MAX_PLAN_CHARS == 50_000
    assert document.DEFAULT_PLAN_NAME == "PLAN.md"
    assert plans_dir_for(Path("/ws")) == Path("/ws/.plan-lsp/plans")


def test_read_is_exact(tmp_path: Path) -> None:
    path = tmp_path / "PLAN.md"
    text = "# Plan 計画 😀\r\n1. a\r2. b\n"
    path.write_bytes(text.encode("utf-8"))
    assert read_plan(path) == text
    path.write_bytes(b"bad \xff byte\n")
    assert read_plan(path) == "bad \ufffd byte\n"


def test_read_never_follows_a_link_or_blocks_on_a_fifo(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.md"
    target.write_text("not the plan\n")
    (tmp_path / "link.md").symlink_to(target)
    assert read_plan(tmp_path / "link.md") is None
    os.mkfifo(tmp_path / "fifo.md")
    assert read_plan(tmp_path / "fifo.md") is None  # returns at once: nobody writes the FIFO


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
