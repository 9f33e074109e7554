"""The plan document: limits, line splitting and fenced code.
(Reads and writes are `policy.plan_paths`' and `policy.safe_fs`'s, tested there.)"""

from __future__ import annotations

from plan_lsp.plan import document
from plan_lsp.plan.document import fenced_code_mask, split_lines


def test_constants() -> None:
    assert document.MAX_PLAN_CHARS == 50_000
    assert document.DEFAULT_PLAN_NAME == "PLAN.md"


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
