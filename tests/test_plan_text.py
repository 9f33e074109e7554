"""Positions in every negotiated encoding: table and property tests of `plan_lsp.plan.text`
and of edits computed for each encoding."""

from __future__ import annotations

from typing import get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plan_lsp.plan.streaming import compute_edit
from plan_lsp.plan.text import (
    ContentChange,
    Encoding,
    LineIndex,
    Position,
    apply_changes,
    as_lines,
    only_line_break,
    units,
    with_line_breaks,
)

# Text that exercises every way positions go wrong: astral characters (2 UTF-16 units, 4
# UTF-8 bytes), 2- and 3-byte characters, combining marks, and every LSP line break next to
# characters str.splitlines also breaks on but LSP does not.
ALPHABET = st.sampled_from(
    [
        "a",
        "b",
        " ",
        "é",
        "中",
        "😀",
        "👍🏽",
        "e\u0301",
        "\n",
        "\r",
        "\r\n",
        "\u2028",
        "\x0c",
        "\x85",
    ]
)
TEXTS = st.lists(ALPHABET, max_size=30).map("".join)

ENCODINGS: tuple[Encoding, ...] = get_args(Encoding)


def _reference_position(text: str, offset: int, encoding: Encoding) -> Position:
    head = text[:offset]
    line = head.count("\n") + head.count("\r") - head.count("\r\n")
    start = max(head.rfind("\n"), head.rfind("\r")) + 1
    if offset < len(text) and head.endswith("\r") and text[offset] == "\n":
        line -= 1
        start = max(head[:-1].rfind("\n"), head[:-1].rfind("\r")) + 1
        return Position(line, units(text[start : offset - 1], encoding))
    return Position(line, units(head[start:], encoding))


@pytest.mark.parametrize(
    ("encoding", "expected"), [("utf-16", 8), ("utf-8", 13), ("utf-32", 7)]
)  # fmt: skip
def test_columns_in_each_encoding(encoding: Encoding, expected: int) -> None:
    text = "# é 😀 中x\nnext"
    index = LineIndex(text)
    assert index.position(text.index("x"), encoding) == Position(0, expected)
    assert index.offset(0, expected, encoding) == text.index("x")


def test_only_lsp_line_breaks_count() -> None:
    text = "a\u2028b\x0cc\rd\r\ne\nf"
    index = LineIndex(text)
    assert index.line_count == 4
    assert index.position(text.index("f"), "utf-16") == Position(3, 0)
    assert index.position(text.index("c"), "utf-16") == Position(0, 4)


def test_clamping() -> None:
    text = "ab😀\ncd"
    index = LineIndex(text)
    assert index.offset(0, 99, "utf-16") == 3  # past the line's end: its end
    assert index.offset(7, 0, "utf-8") == len(text)  # past the last line: the text's end
    assert index.offset(0, 3, "utf-16") == 2  # inside the surrogate pair: the emoji's start
    assert index.offset(0, 5, "utf-8") == 2  # inside the emoji's four bytes


@given(text=TEXTS, data=st.data())
def test_offsets_and_positions_round_trip(text: str, data: st.DataObject) -> None:
    encoding = data.draw(st.sampled_from(ENCODINGS))
    offset = data.draw(st.integers(0, len(text)))
    index = LineIndex(text)
    position = index.position(offset, encoding)
    assert position == _reference_position(text, offset, encoding)
    back = index.offset(position.line, position.character, encoding)
    inside_crlf = 0 < offset < len(text) and text[offset - 1] == "\r" and text[offset] == "\n"
    assert back == (offset - 1 if inside_crlf else offset)


@given(old=TEXTS, new=TEXTS, data=st.data())
def test_computed_edits_apply_in_their_encoding(old: str, new: str, data: st.DataObject) -> None:
    encoding = data.draw(st.sampled_from(ENCODINGS))
    whole_lines = data.draw(st.booleans())
    change = compute_edit(old, new, encoding, whole_lines=whole_lines)
    if change is None:
        assert old == new
        return
    if whole_lines:
        assert change.start.character == 0 and change.end.character == 0
    applied = apply_changes(old, [ContentChange(change.text, change.start, change.end)], encoding)
    assert applied == new


@given(old=TEXTS, new=TEXTS)
def test_whole_line_edits_survive_a_client_that_counts_columns_differently(
    old: str, new: str
) -> None:
    change = compute_edit(old, new, "utf-16", whole_lines=True)
    if change is None:
        return
    for wrong in ENCODINGS:
        edit = ContentChange(change.text, change.start, change.end)
        assert apply_changes(old, [edit], wrong) == new


@given(text=TEXTS, data=st.data())
def test_content_changes_apply_in_order(text: str, data: st.DataObject) -> None:
    encoding = data.draw(st.sampled_from(ENCODINGS))
    expected = text
    changes = []
    for _ in range(data.draw(st.integers(1, 4))):
        a = data.draw(st.integers(0, len(expected)))
        b = data.draw(st.integers(a, len(expected)))
        # never split a \r\n pair: clients do not either
        if 0 < a < len(expected) and expected[a - 1] == "\r" and expected[a] == "\n":
            a -= 1
        if 0 < b < len(expected) and expected[b - 1] == "\r" and expected[b] == "\n":
            b += 1
        insert = data.draw(TEXTS)
        index = LineIndex(expected)
        changes.append(
            ContentChange(insert, index.position(a, encoding), index.position(b, encoding))
        )
        expected = expected[:a] + insert + expected[b:]
    assert apply_changes(text, changes, encoding) == expected


# -- line models -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "style", "held"),
    [
        ("", None, ""),
        ("# P", None, "# P\n"),
        ("# P\n", None, "# P\n"),
        ("a\r\nb", None, "a\r\nb\r\n"),
        ("a\nb", "\r\n", "a\r\nb\r\n"),
        ("a\r\nb\n", "\n", "a\nb\n"),
        ("a\rb", None, "a\rb\r"),
    ],
)
def test_as_lines(text: str, style: str | None, held: str) -> None:
    assert as_lines(text, style) == held


@pytest.mark.parametrize(
    ("text", "only"),
    [("", None), ("a", None), ("a\n", "\n"), ("a\r\nb\r\n", "\r\n"), ("a\r\nb\n", None)],
)
def test_only_line_break(text: str, only: str | None) -> None:
    assert only_line_break(text) == only


@given(st.text(alphabet=st.sampled_from(list("ab\r\n é")), max_size=30))
def test_as_lines_is_whole_lines_and_idempotent(text: str) -> None:
    held = as_lines(text, "\n")
    assert held == as_lines(held, "\n")
    assert held == "" or held.endswith("\n")
    assert only_line_break(held) in (None, "\n")
    assert with_line_breaks(held, "\r\n").replace("\r\n", "\n") == held
