"""Streaming a plan draft into the editor (free of LSP): `PartialArgumentsReader` decodes the
`plan_write` arguments as they arrive; `compute_edit` makes the one smallest edit from what
the client has to what it should have. `plan/coalescer.py` sits between them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

import jiter

from plan_lsp.plan.text import (
    Encoding,
    LineIndex,
    Position,
    final_line_break,
    line_bounds,
)

# -- positions ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TextChange:
    """Replace `old[start_offset:end_offset]` (code-point offsets) by `text`.

    `start`/`end` are the same range as LSP positions in the old text, in the encoding the
    change was computed for.
    """

    start: Position
    end: Position
    text: str
    start_offset: int
    end_offset: int


def offset_to_position(text: str, offset: int, encoding: Encoding = "utf-16") -> Position:
    """The LSP position of code-point `offset` in `text` (lines end at \\n, \\r\\n or \\r)."""
    return LineIndex(text).position(offset, encoding)


def _common_prefix_len(a: str, b: str) -> int:
    """Length of the common prefix, by galloping then bisecting with C-speed slice compares."""
    limit = min(len(a), len(b))
    step = 64
    low = 0
    while low < limit:
        high = min(low + step, limit)
        if a[low:high] != b[low:high]:
            break
        low = high
        step *= 2
    else:
        return limit
    # a[:low] == b[:low] and a[:high] != b[:high]: bisect inside.
    while high - low > 1:
        middle = (low + high) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle
    return low


def compute_edit(
    old: str, new: str, encoding: Encoding = "utf-16", *, whole_lines: bool = False
) -> TextChange | None:
    """The smallest single range of `old` to replace so that it becomes `new`; None if equal.
    Never splits a \\r\\n pair; `whole_lines` widens it to column 0 at both ends, so a
    client that counts columns differently still applies it right."""
    if old == new:
        return None
    prefix = _common_prefix_len(old, new)
    # When both texts end with the same line break, the change stays before it: an insertion
    # after a document's final line break lands past its last line, which line-based editors
    # (Neovim appends the inserted lines, its final line break included) do not apply as
    # the protocol says; before the final line break every editor agrees.
    final = final_line_break(old)
    if final and new.endswith(final) and prefix > len(old) - len(final):
        prefix = len(old) - len(final)
    most = min(len(old), len(new)) - prefix
    suffix = _common_prefix_len(old[::-1][:most], new[::-1][:most])
    if 0 < prefix < len(old) and old[prefix - 1] == "\r" and old[prefix] == "\n":
        prefix -= 1
    end = len(old) - suffix
    if 0 < end < len(old) and old[end - 1] == "\r" and old[end] == "\n":
        suffix -= 1
        end += 1
    index = LineIndex(old)
    if whole_lines:
        prefix, end = line_bounds(old, prefix, end)
        suffix = len(old) - end
        start_pos = Position(index.line_of(prefix), 0)
        if end == len(old) and (not old or old[-1] not in "\r\n"):
            end_pos = Position(index.line_count, 0)  # past the last line: its end
        else:
            end_pos = Position(index.line_of(end), 0)
    else:
        start_pos = index.position(prefix, encoding)
        end_pos = index.position(end, encoding)
    return TextChange(
        start=start_pos,
        end=end_pos,
        text=new[prefix : len(new) - suffix],
        start_offset=prefix,
        end_offset=end,
    )


# -- incremental JSON argument reader ----------------------------------------------------
#
# The arguments are read as `json.loads` reads them: the top-level object's members one by
# one, each key and string value decoded by the standard library's `scanstring` (so escapes,
# lone surrogates included, decode exactly as `json.loads` decodes them) and every other
# value by `raw_decode`. What the standard library cannot tell is whether a value it refuses
# is only cut short or malformed: jiter's strict parse tells (its "EOF while parsing" errors).

# An escape at the end that more input completes: `\`, `\u` .. `\u123`, or a high surrogate
# escape whose low half may follow.
_UNFINISHED_ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{0,3})?\Z")
_HIGH_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}\Z")
# Lone surrogates, raw or escaped, which jiter refuses and `json.loads` keeps: only whether
# a value is complete is asked of jiter, so each becomes a plain `A`.
_SURROGATE = re.compile(r"[\ud800-\udfff]|\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_DECODER = json.JSONDecoder()
# The standard library's C string decoder (`json.loads` of a string, without its wrappers);
# typeshed does not declare it.
_scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
_CONTENT, _FILENAME = "content", "plan_filename"


def _skip(text: str, i: int) -> int:
    """The index of the first character at or after `i` that is not JSON whitespace."""
    while i < len(text) and text[i] in " \t\n\r":
        i += 1
    return i


def _escaped_at(text: str, index: int) -> bool:
    """Whether the character at `index` follows an odd run of backslashes."""
    run = 0
    while run < index and text[index - run - 1] == "\\":
        run += 1
    return run % 2 == 1


def _without_unfinished_escape(text: str) -> str:
    if "\\" not in text[-6:]:  # no escape within reach of the end
        return text
    for pattern in (_UNFINISHED_ESCAPE, _HIGH_SURROGATE_ESCAPE):
        match = pattern.search(text, max(0, len(text) - 6))
        if match and not _escaped_at(text, match.start()):
            text = text[: match.start()]
    return text


def _closing_quote(text: str, start: int) -> int:
    """The index of the quote ending the string whose body starts at `start`, or -1."""
    quote = text.find('"', start)
    while quote >= 0 and _escaped_at(text, quote):
        quote = text.find('"', quote + 1)
    return quote


class _Malformed(ValueError):
    """The arguments break JSON at `at`; what came before it still counts."""

    def __init__(self, message: str, at: int) -> None:
        super().__init__(message)
        self.at = at


def _string(text: str, start: int) -> tuple[str, int | None]:
    """The string whose body starts at `start`: (its value, the index after it) when it is
    complete, else (its complete characters so far, None). `_Malformed` at a bad escape."""
    end = _closing_quote(text, start)
    body = text[start:end] if end >= 0 else _without_unfinished_escape(text[start:])
    try:
        value = _scanstring(body + '"', 0)[0]
    except json.JSONDecodeError as error:
        raise _Malformed(str(error), start + error.pos) from None
    return value, (None if end < 0 else end + 1)


def _value_end(text: str, start: int) -> int | None:
    """The index after the value at `start`, None while it is cut short; `_Malformed`."""
    try:
        end: int = _DECODER.raw_decode(text, start)[1]
        if text[start] in "-0123456789" and not text[end:].strip("0123456789.eE+-"):
            return None  # a number that more characters may continue (`0` of `0.5`)
        return end
    except json.JSONDecodeError as error:
        rest = _SURROGATE.sub(lambda m: "A" if len(m[0]) == 1 else "\\u0041", text[start:])
        try:
            jiter.from_json(rest.encode(), cache_mode="none")
        except ValueError as cut:
            if str(cut).startswith("EOF while parsing"):
                return None
        raise _Malformed(str(error), error.pos) from None


@dataclass
class _Reading:
    """What a prefix of the arguments says."""

    content: str | None = None  # None: no content string has begun
    content_complete: bool = False
    plan_filename: str | None = None  # the last complete one
    content_open_at: int | None = None  # where the text ends inside the content string
    done: bool = False
    error: str | None = None


def _read(text: str) -> _Reading:
    """The reading of `text`, a prefix of the arguments."""
    reading = _Reading()
    i = _skip(text, 0)
    if i == len(text):
        return reading
    if text[i] != "{":
        reading.error = "arguments are not a JSON object"
        return reading
    expect = '"}'  # what may come next: a key or the end, then `,` or `}` after a value
    i += 1
    try:
        while True:
            i = _skip(text, i)
            if i == len(text):
                return reading
            if text[i] not in expect:
                raise _Malformed(f"expected one of {expect} at character {i}", i)
            if text[i] == "}":
                reading.done = True
                return reading
            if text[i] == ",":
                expect = '"'
                i += 1
                continue
            key, after = _string(text, i + 1)
            if after is None:
                return reading
            i = _skip(text, after)
            if i == len(text):
                return reading
            if text[i] != ":":
                raise _Malformed(f"expected : at character {i}", i)
            i = _skip(text, i + 1)
            if i == len(text):
                return reading
            if key in (_CONTENT, _FILENAME) and text[i] == '"':
                try:
                    value, end = _string(text, i + 1)
                except _Malformed as malformed:
                    if key == _CONTENT:
                        reading.content = _string(text[: malformed.at], i + 1)[0]
                        reading.content_complete = False
                    raise
                if key == _FILENAME:
                    if end is None:
                        return reading
                    reading.plan_filename = value
                else:
                    reading.content, reading.content_complete = value, end is not None
                    if end is None:
                        reading.content_open_at = len(_without_unfinished_escape(text))
                        return reading
            else:
                end = _value_end(text, i)
                if end is None:
                    return reading
                if key == _FILENAME:  # not a string: no name
                    reading.plan_filename = None
            i = end
            expect = ",}"
    except _Malformed as malformed:
        reading.error = str(malformed)
        return reading


class PartialArgumentsReader:
    """Reads the `plan_write` arguments JSON as it streams, in pieces of any size.

    `content_so_far` grows by complete escapes only (each value a prefix of the next); a
    repeated key restarts, as `json.loads` keeps the last; malformed input sets `error`.
    While the content streams only the new text is decoded, so reading after every piece
    costs in proportion to the piece.
    """

    def __init__(self) -> None:
        self._pieces: list[str] = []  # all the text
        self._stale = False
        # Inside the content string: the text after its last complete escape, not decoded.
        self._content_rest: list[str] | None = None
        self._content: str | None = None
        self._content_more: list[str] = []  # decoded since, joined to it when read
        self._content_complete = False
        self._plan_filename: str | None = None
        self._done = False
        self._error: str | None = None

    def feed(self, chunk: str) -> None:
        if chunk and not self._done and self._error is None:
            self._pieces.append(chunk)
            if self._content_rest is not None:
                self._content_rest.append(chunk)
            self._stale = True

    def _refresh(self) -> None:
        if not self._stale:
            return
        self._stale = False
        if self._content_rest is not None and self._content_advanced(self._content_rest):
            return
        self._content_rest = None
        self._join_content()
        if len(self._pieces) > 1:
            self._pieces[:] = ["".join(self._pieces)]
        text = self._pieces[0] if self._pieces else ""
        try:
            reading = _read(text)
        except (ValueError, RecursionError) as error:  # never in practice
            reading = _Reading(error=f"unreadable arguments: {error}")
        if reading.error is not None:
            self._error = reading.error
            self._pieces.clear()
        if reading.content is not None:
            self._content = reading.content
            self._content_complete = reading.content_complete
        self._plan_filename = reading.plan_filename
        self._done = reading.done
        if reading.content_open_at is not None and not self._done and self._error is None:
            self._content_rest = [text[reading.content_open_at :]]

    def _content_advanced(self, rest: list[str]) -> bool:
        """Decode what arrived inside the content string; False if it may have ended (or
        holds something only the whole text explains)."""
        text = "".join(rest)
        if _closing_quote(text, 0) >= 0:
            return False
        complete = _without_unfinished_escape(text)
        if complete:
            try:
                decoded = _scanstring(complete + '"', 0)[0]
            except ValueError:
                return False
            self._content_more.append(decoded)
        rest[:] = [text[len(complete) :]]
        return True

    @property
    def content_so_far(self) -> str:
        self._refresh()
        self._join_content()
        return self._content or ""

    def _join_content(self) -> None:
        if self._content_more:
            self._content = (self._content or "") + "".join(self._content_more)
            self._content_more.clear()

    @property
    def content_started(self) -> bool:
        self._refresh()
        return self._content is not None

    @property
    def content_complete(self) -> bool:
        self._refresh()
        return self._content_complete

    @property
    def plan_filename(self) -> str | None:
        self._refresh()
        return self._plan_filename

    @property
    def done(self) -> bool:
        self._refresh()
        return self._done

    @property
    def error(self) -> str | None:
        self._refresh()
        return self._error
