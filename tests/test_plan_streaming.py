"""Streaming drafts: JSON argument reader, minimal edits with UTF-16 positions, coalescing."""

from __future__ import annotations

import asyncio
import itertools
import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from plan_lsp.plan import streaming
from plan_lsp.plan.coalescer import DraftTarget
from plan_lsp.plan.streaming import (
    PartialArgumentsReader,
    Position,
    TextChange,
    _without_unfinished_escape,
    compute_edit,
    offset_to_position,
)

# -- an independent LSP client model: apply edits by line/UTF-16 positions -------------------


def position_to_offset(text: str, position: Position) -> int:
    """What an LSP client does: find the line, then count UTF-16 code units."""
    offset = 0
    line = 0
    while line < position.line:
        newline = min(
            (i for i in (text.find("\n", offset), text.find("\r", offset)) if i >= 0),
            default=-1,
        )
        assert newline >= 0, "position beyond the last line"
        offset = newline + (2 if text.startswith("\r\n", newline) else 1)
        line += 1
    units = 0
    while units < position.character:
        char = text[offset]
        assert char not in "\r\n", "character beyond the end of the line"
        units += 2 if ord(char) > 0xFFFF else 1
        offset += 1
    assert units == position.character, "position inside a surrogate pair"
    return offset


def apply_change(text: str, change: TextChange) -> str:
    """Apply a change by its code-point offsets."""
    return text[: change.start_offset] + change.text + text[change.end_offset :]


def apply_by_position(text: str, change: TextChange) -> str:
    start = position_to_offset(text, change.start)
    end = position_to_offset(text, change.end)
    assert (start, end) == (change.start_offset, change.end_offset)
    return text[:start] + change.text + text[end:]


# -- offset_to_position -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "offset", "expected"),
    [
        ("", 0, Position(0, 0)),
        ("abc", 3, Position(0, 3)),
        ("a\nb", 2, Position(1, 0)),
        ("😀x", 1, Position(0, 2)),  # an emoji is two UTF-16 units
        ("😀x", 2, Position(0, 3)),
        ("計画x", 2, Position(0, 2)),  # CJK in the BMP is one unit each
        ("a\r\nb😀c", 5, Position(1, 3)),
        ("a\rb", 2, Position(1, 0)),  # a lone \r ends a line in LSP
        ("a\r\n\r\nb", 5, Position(2, 0)),
        ("x\u2028y", 3, Position(0, 3)),  # not an LSP line break
        ("👩‍👩‍👧z", 5, Position(0, 8)),  # ZWJ sequence: 3 emoji + 2 joiners
    ],
)
def test_offset_to_position(text: str, offset: int, expected: Position) -> None:
    assert offset_to_position(text, offset) == expected


def test_offset_out_of_range() -> None:
    with pytest.raises(ValueError):
        offset_to_position("ab", 3)


# -- compute_edit -----------------------------------------------------------------------------


def test_equal_texts_give_no_edit() -> None:
    assert compute_edit("same", "same") is None


def test_append_is_an_insertion_at_the_end() -> None:
    change = compute_edit("# Plan\n1. a", "# Plan\n1. abc\n2. 😀")
    assert change == TextChange(Position(1, 4), Position(1, 4), "bc\n2. 😀", 11, 11)


def test_middle_replacement_after_emoji_and_cjk() -> None:
    old = "計画 😀 one\nline two"
    new = "計画 😀 ONE\nline two"
    change = compute_edit(old, new)
    assert change is not None
    assert change.start == Position(0, 6)  # 2 CJK + space + 2 (emoji) + space
    assert change.end == Position(0, 9)
    assert change.text == "ONE"
    assert apply_by_position(old, change) == new


def test_never_splits_crlf() -> None:
    change = compute_edit("a\r\nb", "a\rX\nb")
    assert change is not None
    assert apply_by_position("a\r\nb", change) == "a\rX\nb"
    change = compute_edit("a\r\nb", "a\r")
    assert change is not None
    assert change.start == Position(0, 1)
    assert apply_by_position("a\r\nb", change) == "a\r"


def test_large_texts_are_fast_and_minimal() -> None:
    base = "line of the plan\n" * 3000
    change = compute_edit(base, base[:25000] + "X" + base[25000:])
    assert change is not None
    assert change.text == "X"
    assert change.start_offset == change.end_offset == 25000


_TEXTS = st.text(alphabet=st.sampled_from(list("ab\n\r 計😀é#-[]x1.")), max_size=40) | st.text(
    max_size=40
)


@settings(max_examples=500, deadline=None)
@given(old=_TEXTS, new=_TEXTS)
@example(old="\r\n", new="\rX\n")
@example(old="a\r\nb", new="a\r")
@example(old="\r\n\r\n", new="\r\n")
@example(old="x\r\n", new="\n")
@example(old="a\n", new="a\nb\n")
@example(old="a\r\n", new="a\r\nb\r\n")
@example(old="\n", new="# P\n")
def test_compute_edit_turns_old_into_new_by_positions(old: str, new: str) -> None:
    change = compute_edit(old, new)
    if old == new:
        assert change is None
        return
    assert change is not None
    assert apply_change(old, change) == new
    assert apply_by_position(old, change) == new
    # minimal: the kept prefix is the longest common one, less one char only to keep a
    # \r\n pair whole; likewise the kept suffix
    prefix = next(
        (i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b),
        min(len(old), len(new)),
    )
    # ... and never past a final line break both texts end with (line-based editors)
    final = "\r\n" if old.endswith("\r\n") else old[-1:] if old.endswith(("\n", "\r")) else ""
    if final and new.endswith(final):
        prefix = min(prefix, len(old) - len(final))
        assert change.start_offset <= len(old) - len(final)
    assert change.start_offset in (prefix, prefix - 1)
    if change.start_offset == prefix - 1:
        assert old[prefix - 1 : prefix + 1] == "\r\n"
    suffix = len(old) - change.end_offset
    longest = next(
        (
            i
            for i in range(min(len(old), len(new)) - change.start_offset)
            if old[len(old) - 1 - i] != new[len(new) - 1 - i]
        ),
        min(len(old), len(new)) - change.start_offset,
    )
    assert suffix in (longest, longest - 1)
    if suffix == longest - 1:
        assert old[change.end_offset - 2 : change.end_offset] == "\r\n"


def test_an_insertion_at_the_end_stays_before_the_final_line_break() -> None:
    """Neovim appends an insertion past its last line as lines, final line break included:
    an edit that grows a text ending in a line break is placed before that line break."""
    change = compute_edit("# Plan\n", "# Plan\n\n## Steps\n")
    assert change is not None
    assert (change.start, change.end, change.text) == (
        Position(0, 6),
        Position(0, 6),
        "\n\n## Steps",
    )
    change = compute_edit("\n", "# P\n")  # Vim's empty buffer, a first delta cut mid-line
    assert change is not None
    assert (change.start, change.end, change.text) == (Position(0, 0), Position(0, 0), "# P")


# -- PartialArgumentsReader -------------------------------------------------------------------


def _chunks(text: str, cuts: list[int]) -> list[str]:
    points = sorted({min(cut, len(text)) for cut in cuts} | {0, len(text)})
    return [text[a:b] for a, b in itertools.pairwise(points)]


@st.composite
def _arguments(draw: st.DrawFn) -> tuple[str, dict[str, object]]:
    content = draw(st.text(max_size=200))
    arguments: dict[str, object] = {"content": content}
    where = draw(st.sampled_from(["none", "before", "after", "null"]))
    filename = draw(st.text(max_size=20))
    if where == "before":
        arguments = {"plan_filename": filename, "content": content}
    elif where == "after":
        arguments["plan_filename"] = filename
    elif where == "null":
        arguments = {"plan_filename": None, "content": content}
    if draw(st.booleans()):
        arguments["extra"] = {"nested": ["}", '"', {"a": 1.5}], "flag": True}
    raw = json.dumps(
        arguments,
        ensure_ascii=draw(st.booleans()),
        indent=draw(st.sampled_from([None, 2])),
    )
    return raw, arguments


@settings(max_examples=400, deadline=None)
@given(
    case=_arguments(),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=60),
    small=st.integers(min_value=1, max_value=16),
)
def test_reader_any_chunking_gives_decoded_content(
    case: tuple[str, dict[str, object]], cuts: list[int], small: int
) -> None:
    raw, arguments = case
    for pieces in (_chunks(raw, cuts), [raw[i : i + small] for i in range(0, len(raw), small)]):
        reader = PartialArgumentsReader()
        seen: list[str] = []
        for piece in pieces:
            reader.feed(piece)
            seen.append(reader.content_so_far)
        final = reader.content_so_far
        assert final == arguments["content"]
        assert all(final.startswith(value) for value in seen)
        assert reader.plan_filename == arguments.get("plan_filename")
        assert reader.done and reader.content_complete and reader.error is None


def test_reader_holds_back_incomplete_escapes() -> None:
    reader = PartialArgumentsReader()
    values = []
    for piece in ['{"content": "a\\', "u00", "e9b\\ud83d", "\\ude00", 'c\\ud800x"}']:
        reader.feed(piece)
        values.append(reader.content_so_far)
    assert values == ["a", "a", "aéb", "aéb😀", "aéb😀c\ud800x"]
    assert values[-1] == json.loads('"a\\u00e9b\\ud83d\\ude00c\\ud800x"')


def test_reader_filename_only_when_complete() -> None:
    reader = PartialArgumentsReader()
    reader.feed('{"plan_filename": "sub/pl')
    assert reader.plan_filename is None
    assert not reader.content_started
    reader.feed('an.md", "content": "')
    assert reader.plan_filename == "sub/plan.md"
    assert reader.content_started and reader.content_so_far == ""


def test_reader_escaped_key_and_repeated_content() -> None:
    raw = '{"cont\\u0065nt": "first", "content": "second"}'
    reader = PartialArgumentsReader()
    reader.feed(raw)
    assert reader.content_so_far == json.loads(raw)["content"] == "second"


@pytest.mark.parametrize(
    ("raw", "content"),
    [
        ('["content", "x"]', ""),
        ('{"content" "x"}', ""),
        ('{"content": "ok\\q"}', "ok"),
        ('{"content": "ok\\u12x4"}', "ok"),
        ('{"a": 1 "content": "x"}', ""),
    ],
)
def test_reader_malformed_input_sets_error(raw: str, content: str) -> None:
    reader = PartialArgumentsReader()
    reader.feed(raw)
    assert reader.error is not None
    reader.feed(', "content": "more", "plan_filename": "x.md"}')  # ignored, never raises
    assert reader.content_so_far == content
    assert reader.plan_filename is None
    assert not reader.done


# -- DraftTarget ------------------------------------------------------------------------------


class FakeClock:
    """Time that moves only when the consumer sleeps: the pace is checked exactly."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)


async def test_draft_target_paces_and_reaches_final_text() -> None:
    clock = FakeClock()
    target = DraftTarget(clock=clock, sleep=clock.sleep)
    raw = json.dumps({"content": "# Plan 😀\n1. first\n2. second 計画\n", "plan_filename": None})
    seen: list[str] = []
    stamps: list[float] = []

    async def consume() -> None:
        last: str | None = None
        while (text := await target.next_text(last)) is not None:
            stamps.append(clock.now)
            seen.append(text)
            last = text

    consumer = asyncio.create_task(consume())
    for start in range(0, len(raw), 4):
        target.feed(raw[start : start + 4])
        await asyncio.sleep(0)
    target.finish()
    await consumer
    assert seen[-1] == json.loads(raw)["content"]
    assert all(b.startswith(a) for a, b in itertools.pairwise(seen))  # every draft a prefix
    assert all(b - a >= 1 / 60 - 1e-9 for a, b in itertools.pairwise(stamps))
    assert 1 < len(seen) < len(raw) // 4  # taken together, but incremental


async def test_nothing_before_the_content_begins() -> None:
    target = DraftTarget()
    target.feed('{"plan_filename": "x.md", ')
    assert target.text is None
    target.feed('"content": "')
    assert target.text == ""


async def test_final_text_overrides_the_stream() -> None:
    target = DraftTarget(interval=0)
    target.feed('{"content": "abc')
    target.finish("xyz")
    assert await target.next_text(None) == "xyz"
    assert await target.next_text("xyz") is None
    target.feed("ignored after finish")
    assert target.text == "xyz"


async def test_finish_without_any_content_gives_nothing() -> None:
    target = DraftTarget()
    target.finish()
    assert await target.next_text(None) is None


@settings(max_examples=150, deadline=None)
@given(
    content=st.text(max_size=120),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=30),
    drain_every=st.integers(min_value=1, max_value=5),
)
def test_any_chunking_ends_with_the_final_text(
    content: str, cuts: list[int], drain_every: int
) -> None:
    raw = json.dumps({"content": content})

    async def run() -> str | None:
        clock = FakeClock()
        target = DraftTarget(clock=clock, sleep=clock.sleep)
        last: str | None = None
        for number, piece in enumerate(_chunks(raw, cuts), start=1):
            target.feed(piece)
            if number % drain_every == 0 and target.text not in (None, last):
                last = await target.next_text(last)
                assert last is not None and content.startswith(last)
        target.finish()
        while (text := await target.next_text(last)) is not None:
            last = text
        return last

    result = asyncio.run(run())
    assert result == content


# -- PartialArgumentsReader: against json.loads, every piece read ----------------------------

# Characters that stress the decoder: escapes, quotes, astral characters (two \u escapes),
# lone surrogates (which json.loads keeps), the noncharacters the reader marks places with.
_HARD_CHARS = st.sampled_from(
    ["\\", '"', "a", "😀", "\ud800", "\udc00", "\ud83d", "\ufdd0", "\ufdd1", "\n", "é", "/"]
)
_HARD_TEXT = st.lists(_HARD_CHARS, max_size=40).map("".join) | st.text(
    st.characters(codec=None, exclude_categories=()), max_size=40
)
_EXTRA = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _HARD_TEXT,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(_HARD_TEXT, children, max_size=3)
    ),
    max_leaves=6,
)


@st.composite
def _hard_arguments(draw: st.DrawFn) -> str:
    members: list[tuple[str, object]] = [("content", draw(_HARD_TEXT))]
    for _ in range(draw(st.integers(0, 3))):
        key = draw(st.sampled_from(["content", "plan_filename", "extra", "cont\\u0065nt"]))
        value = draw(_HARD_TEXT) if key != "extra" else draw(_EXTRA)
        members.insert(draw(st.integers(0, len(members))), (key, value))
    ascii_only = draw(st.booleans())
    parts = [
        (json.dumps(key) if "\\" not in key else f'"{key}"')
        + ": "
        + json.dumps(value, ensure_ascii=ascii_only)
        for key, value in members
    ]
    return "{" + ", ".join(parts) + "}"


@settings(max_examples=400, deadline=None)
@given(raw=_hard_arguments(), size=st.integers(min_value=1, max_value=9))
def test_reader_agrees_with_json_loads_read_after_every_piece(raw: str, size: int) -> None:
    expected = json.loads(raw)
    content = expected["content"]
    reader = PartialArgumentsReader()
    shown = ""
    restarts = _restarts(raw)
    for start in range(0, len(raw), size):
        reader.feed(raw[start : start + size])
        now = reader.content_so_far
        if not restarts:  # one content string: what was shown is never taken back
            assert now.startswith(shown), (shown, now)
        assert reader.plan_filename in (None, expected.get("plan_filename"), *_filenames(raw))
        shown = now
    assert reader.error is None and reader.done and reader.content_complete
    assert reader.content_so_far == content
    assert reader.plan_filename == (
        expected["plan_filename"] if isinstance(expected.get("plan_filename"), str) else None
    )


def _restarts(raw: str) -> bool:
    """Whether the content key comes more than once (each restarts the content)."""
    return raw.count('"content"') + raw.count('"cont\\u0065nt"') > 1


def _filenames(raw: str) -> list[object]:
    """Every value a repeated plan_filename key had (the reader shows each when complete)."""
    pairs = json.loads(raw, object_pairs_hook=lambda items: items)
    return [value for key, value in pairs if key == "plan_filename"]


@pytest.mark.parametrize(
    ("pieces", "shown"),
    [
        # a \u escape cut anywhere shows nothing of it until its fourth digit
        (['{"content": "x', "\\", "u", "1", "2", "3", '4"}'], ["x", "x", "x", "x", "x", "x", "xሴ"]),
        # a high surrogate waits for what follows: a low half (one character) ...
        (['{"content": "a\\ud83d', "\\", "ude00", '"}'], ["a", "a", "a😀", "a😀"]),
        # ... or anything else (then it stays alone, as json.loads keeps it)
        (['{"content": "a\\ud83d', "\\n", '"}'], ["a", "a\ud83d\n", "a\ud83d\n"]),
        (['{"content": "a\\ud83d', '"}'], ["a", "a\ud83d"]),
        # an escaped backslash before a quote ends the string; an escaped quote does not
        (['{"content": "a\\\\', '"', ', "x": 1}'], ["a\\", "a\\", "a\\"]),
        (['{"content": "a\\', '"', 'b"}'], ["a", 'a"', 'a"b']),
        # the noncharacters the reader marks places with, in the content itself
        (['{"content": "\ufdd0\\ufdd1', '\ufdd2"}'], ["\ufdd0\ufdd1", "\ufdd0\ufdd1\ufdd2"]),
    ],
)
def test_reader_shows_only_complete_characters(pieces: list[str], shown: list[str]) -> None:
    reader = PartialArgumentsReader()
    values = []
    for piece in pieces:
        reader.feed(piece)
        values.append(reader.content_so_far)
    assert values == shown
    assert reader.done


def test_reader_with_every_noncharacter_in_use_waits_for_the_end() -> None:
    """Noncharacters (which an earlier reader used to mark places) are content like any
    other: shown as they arrive, every value a prefix of the next."""
    every = "".join(chr(c) for c in range(0xFDD0, 0xFDF0))
    raw = json.dumps({"content": every + "plan"}, ensure_ascii=False)
    reader = PartialArgumentsReader()
    values = []
    for start in range(0, len(raw), 5):
        reader.feed(raw[start : start + 5])
        values.append(reader.content_so_far)
    assert values[-1] == every + "plan" and reader.done
    assert all((every + "plan").startswith(value) for value in values)


def test_reader_stops_at_the_end_of_the_object() -> None:
    reader = PartialArgumentsReader()
    reader.feed('{"content": "x"} {"content": "')
    reader.feed('y"}')
    assert reader.done and reader.error is None
    assert reader.content_so_far == "x" and reader.content_complete


def test_reader_error_after_a_complete_file_name_keeps_it() -> None:
    reader = PartialArgumentsReader()
    reader.feed('{"plan_filename": "a.md", "content": "ok\\q tail"}')
    assert reader.error is not None and "escape" in reader.error
    assert reader.plan_filename == "a.md"
    assert reader.content_so_far == "ok"
    assert not reader.done


def test_reader_repeated_key_restarts_and_keeps_the_last_complete_file_name() -> None:
    reader = PartialArgumentsReader()
    reader.feed('{"content": "first", "plan_filename": "a.md", "plan_filename": "b.')
    assert reader.content_so_far == "first" and reader.content_complete
    assert reader.plan_filename == "a.md"  # the new name is not complete yet
    reader.feed('md", "content": "sec')
    assert reader.plan_filename == "b.md"
    assert reader.content_so_far == "sec" and not reader.content_complete
    reader.feed('ond", "plan_filename": null}')
    assert reader.content_so_far == "second" and reader.plan_filename is None and reader.done


@settings(max_examples=300, deadline=None)
@given(raw=_hard_arguments(), data=st.data())
def test_reader_never_raises_on_damaged_arguments(raw: str, data: st.DataObject) -> None:
    """Cut, doubled or replaced characters: never an exception; an error or no end unless
    the damaged text is still a JSON object."""
    where = data.draw(st.integers(0, len(raw)))
    damage = data.draw(st.sampled_from(["cut", "insert", "replace"]))
    junk = data.draw(st.sampled_from([*'"\\{}[],:x 0\ud800', "\\u12", "null"]))
    if damage == "cut":
        raw = raw[:where]
    elif damage == "insert":
        raw = raw[:where] + junk + raw[where:]
    else:
        raw = raw[:where] + junk + raw[where + 1 :]
    reader = PartialArgumentsReader()
    shown = ""
    for start in range(0, len(raw), 3):
        reader.feed(raw[start : start + 3])
        if not _restarts(raw):
            assert reader.content_so_far.startswith(shown)
        shown = reader.content_so_far
    try:
        parsed = json.loads(raw)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and raw.rstrip().endswith("}"):
        assert reader.done and reader.error is None
        content = parsed.get("content")
        if isinstance(content, str):
            assert reader.content_so_far == content
    elif parsed is not None:  # valid JSON but not an object
        assert reader.error is not None
    elif reader.done:  # only a complete object, then more that is not read
        value, end = json.JSONDecoder().raw_decode(raw.lstrip())
        assert isinstance(value, dict) and raw.lstrip()[end:].strip()
        assert reader.error is None


def test_reader_decodes_each_piece_of_a_long_content_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Read after every 4-character piece, a 20 KB content costs the JSON decoder a few times
    its size, not the square of it: while the content string streams, only what arrived is
    decoded."""
    parsed: list[int] = []
    real = streaming._scanstring

    def counting(data: str, start: int) -> tuple[str, int]:
        parsed.append(len(data) - start)
        return real(data, start)

    monkeypatch.setattr(streaming, "_scanstring", counting)
    content = "".join(f'- [ ] step {i}: change `mod_{i}.py` — "quoted" 😀\n' for i in range(400))
    raw = json.dumps({"plan_filename": "plan.md", "content": content})
    assert len(raw) > 20_000
    reader = PartialArgumentsReader()
    for start in range(0, len(raw), 4):
        reader.feed(raw[start : start + 4])
        _ = reader.content_so_far, reader.plan_filename
    assert reader.content_so_far == content and reader.done
    assert sum(parsed) < 4 * len(raw)


@settings(max_examples=300, deadline=None)
@given(value=_HARD_TEXT, ascii_only=st.booleans(), data=st.data())
def test_an_unfinished_escape_is_cut_and_nothing_else(
    value: str, ascii_only: bool, data: st.DataObject
) -> None:
    """Cut anywhere, a string body loses only what more input could change: a started escape,
    and a high surrogate escape whose low half may follow (11 characters at most). What is
    left decodes on its own to a prefix of the whole string's decoding."""
    body = json.dumps(value, ensure_ascii=ascii_only)[1:-1]
    whole = json.loads(f'"{body}"')
    cut = data.draw(st.integers(0, len(body)))
    kept = _without_unfinished_escape(body[:cut])
    assert body.startswith(kept) and cut - len(kept) <= 11
    assert whole.startswith(json.loads(f'"{kept}"'))
