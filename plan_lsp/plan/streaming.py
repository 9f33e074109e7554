"""Streaming a plan draft into the editor as small incremental edits.

Three pieces, all free of LSP:

- `PartialArgumentsReader` decodes the `plan_write` arguments while they arrive as raw JSON
  text in arbitrary pieces, exposing the `content` decoded so far;
- `compute_edit` turns "what the client has" and "what it should have" into the one
  smallest replaced range, with LSP positions in the negotiated encoding;
- `DraftCoalescer` sits between them: it accepts deltas at any rate and hands out at most
  one edit per interval to an awaiting sender, recomputing against the client's real text
  when an edit was refused.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Any, Literal

import jiter

from plan_lsp.plan.text import (
    Encoding,
    LineIndex,
    Position,
    final_line_break,
    line_bounds,
    units,
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


def utf16_len(text: str) -> int:
    return units(text, "utf-16")


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


def _common_suffix_len(a: str, b: str, limit: int) -> int:
    return _common_prefix_len(a[::-1][:limit], b[::-1][:limit])


def compute_edit(
    old: str, new: str, encoding: Encoding = "utf-16", *, whole_lines: bool = False
) -> TextChange | None:
    """The smallest single range of `old` to replace so that it becomes `new`; None if equal.

    The range never splits a \\r\\n pair in `old`, so its positions are well defined. With
    `whole_lines` the range is widened to whole lines, so both positions have column 0 (or
    lie past the last line): a client that counts columns differently still applies it
    right.
    """
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
    suffix = _common_suffix_len(old, new, min(len(old), len(new)) - prefix)
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
# jiter parses the arguments received so far in its partial mode, which keeps the open
# string's complete characters (an escape cut short, or a high surrogate whose low half may
# follow, is left out). Which string is still open is read off the result: a noncharacter the
# arguments do not hold is appended, and the value that ends with it is the open one.

_NONCHARACTERS = range(0xFDD0, 0xFDF0)  # never in a plan: free to mark a place
_ESCAPED_NONCHARACTER = re.compile(r"\\u[fF][dD][dDeE][0-9a-fA-F]")
# An escape at the end that more input completes: `\`, `\u` .. `\u123`, or a high surrogate
# escape whose low half may follow.
_UNFINISHED_ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{0,3})?\Z")
_HIGH_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}\Z")
# Every escape left to right (so `\\` is read as one), picking out lone surrogates, escaped
# or raw: `json.loads` keeps them as they are, jiter refuses them. Rarely needed: compiled
# (by `re`'s cache) on first use, not at import.
_LONE_SURROGATE = (
    r"(?s)\\(?:u(?:[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
    r"|([dD][89a-fA-F][0-9a-fA-F]{2}))|.)|([\ud800-\udfff])"
)
_ERROR_AT = re.compile(r" at line (\d+) column (\d+)\Z")


def _unused_noncharacters(text: str, count: int) -> list[str] | None:
    """`count` noncharacters `text` holds neither raw nor escaped; None if there are not."""
    escaped = {int(m[0][2:], 16) for m in _ESCAPED_NONCHARACTER.finditer(text)}
    unused = (chr(c) for c in _NONCHARACTERS if c not in escaped and chr(c) not in text)
    found = list(itertools.islice(unused, count))
    return found if len(found) == count else None


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


class _Restore:
    """Puts back the lone surrogates `_protect` wrote as a marker and four hex digits."""

    def __init__(self, marker: str | None = None) -> None:
        self._pattern = re.compile(re.escape(marker) + "([0-9a-fA-F]{4})") if marker else None

    def __call__(self, value: str) -> str:
        if self._pattern is None:
            return value
        return self._pattern.sub(lambda m: chr(int(m[1], 16)), value)


class _Refused(Exception):
    """jiter refused `data`: it ends too soon (`incomplete`), a complete value is followed by
    more (`trailing`), or it is malformed at byte `offset`."""

    def __init__(self, message: str, data: bytes, restore: _Restore) -> None:
        super().__init__(message)
        self.data = data
        self.restore = restore
        self.incomplete = message.startswith("EOF while parsing")
        self.trailing = message.startswith("trailing characters")
        self.offset = len(data)
        where = _ERROR_AT.search(message)
        if where:
            line_start = 0
            for _ in range(int(where[1]) - 1):
                line_start = data.find(b"\n", line_start) + 1
            self.offset = max(0, min(len(data), line_start + int(where[2]) - 1))


def _protect(text: str, avoid: str) -> tuple[bytes, _Restore]:
    """`text` encoded with each lone surrogate written as a marker and its hex digits."""
    markers = _unused_noncharacters(text + avoid, 1)
    if markers is None:
        raise _Refused("lone surrogates, and every noncharacter in use", b"", _Restore())
    marker = markers[0]

    def replace(match: re.Match[str]) -> str:
        if match[1]:
            return marker + match[1]
        if match[2]:
            return f"{marker}{ord(match[2]):04x}"
        return match[0]

    return re.sub(_LONE_SURROGATE, replace, text).encode(), _Restore(marker)


def _load(
    text: str, *, mode: Literal["trailing-strings", "on", "off"], avoid: str = ""
) -> tuple[Any, _Restore]:
    """`jiter.from_json(text)` in partial `mode` ("trailing-strings" keeps an open string at
    the end, "on" leaves it out); lone surrogates decode as `json.loads` decodes them.
    Raises `_Refused`."""
    restore = _Restore()
    try:
        data = text.encode()
    except UnicodeEncodeError:  # a raw lone surrogate
        data, restore = _protect(text, avoid)
    try:
        return jiter.from_json(data, partial_mode=mode, cache_mode="keys"), restore
    except ValueError as error:
        message = str(error)
    if "surrogate" in message or "hex escape" in message:
        data, restore = _protect(text, avoid)
        try:
            return jiter.from_json(data, partial_mode=mode, cache_mode="keys"), restore
        except ValueError as error:
            message = str(error)
    raise _Refused(message, data, restore)


@dataclass
class _Reading:
    """What a prefix of the arguments says."""

    content: str | None = None  # None: no content string has begun
    content_complete: bool = False
    plan_filename: str | None = None
    filename_open: bool = False  # a file name string has begun and not ended; plan_filename
    # is then the last complete one
    content_open_at: int | None = None  # where the text ends inside the content string
    done: bool = False
    error: str | None = None

    @property
    def open(self) -> bool:
        return (self.content is not None and not self.content_complete) or self.filename_open


def _interpret(value: Any, restore: _Restore, sentinel: str = "") -> _Reading:
    """The reading of a parsed prefix, in which a string ending with `sentinel` is open."""
    if not isinstance(value, dict):
        return _Reading(error="arguments are not a JSON object")
    reading = _Reading()
    content = value.get(PartialArgumentsReader.CONTENT_KEY)
    if isinstance(content, str):
        reading.content_complete = not (sentinel and content.endswith(sentinel))
        reading.content = restore(content if reading.content_complete else content[:-1])
    filename = value.get(PartialArgumentsReader.FILENAME_KEY)
    if isinstance(filename, str):
        reading.filename_open = bool(sentinel) and filename.endswith(sentinel)
        reading.plan_filename = None if reading.filename_open else restore(filename)
    return reading


def _read(text: str) -> _Reading | None:
    """The reading of `text`, a prefix of the arguments; None when it cannot be told yet."""
    if not text or text.isspace():
        return _Reading()
    markers = _unused_noncharacters(text, 2)
    sentinel_reading: _Reading | None = None
    if markers is not None:
        sentinel, spare = markers
        complete = _without_unfinished_escape(text)
        try:
            value, restore = _load(complete + sentinel, mode="trailing-strings", avoid=spare)
        except _Refused:
            pass  # the text does not end inside a string
        else:
            sentinel_reading = _interpret(value, restore, sentinel)
            if sentinel_reading.error is None and sentinel_reading.open:
                if sentinel_reading.content is not None and not sentinel_reading.content_complete:
                    sentinel_reading.content_open_at = len(complete)
                if sentinel_reading.filename_open:  # a repeated key: the name before it
                    value, restore = _load(complete, mode="on", avoid=spare)
                    sentinel_reading.plan_filename = _interpret(value, restore).plan_filename
                return sentinel_reading  # inside the content or the file name
    # Outside a string, inside another, or malformed: the strict parse tells which.
    try:
        value, restore = _load(text, mode="off")
    except _Refused as refused:
        if refused.incomplete:
            if sentinel_reading is not None:
                return sentinel_reading
            if markers is not None:  # the sentinel was refused: no string is open
                value, restore = _load(text, mode="trailing-strings")
                return _interpret(value, restore)
            return None
        if refused.trailing:  # a complete object and more: what follows is not read
            value = jiter.from_json(refused.data[: refused.offset], cache_mode="keys")
            restore = refused.restore
        else:  # malformed: what came before the fault still counts
            reading = _read(refused.data[: refused.offset].decode(errors="ignore")) or _Reading()
            if reading.content is not None:
                reading.content = refused.restore(reading.content)
            if reading.plan_filename is not None:
                reading.plan_filename = refused.restore(reading.plan_filename)
            reading.done = False
            reading.error = str(refused)
            return reading
    reading = _interpret(value, restore)
    reading.done = reading.error is None
    return reading


class PartialArgumentsReader:
    """Reads the `plan_write` arguments JSON as it streams, in pieces of any size.

    `content_so_far` is the decoded `content` string so far (complete escapes only, so every
    value is a prefix of the next); `plan_filename` is set once that string is complete.
    Other keys are skipped, whatever their values. A repeated key restarts its value, as
    `json.loads` keeps the last. Malformed input sets `error` and stops reading; the final
    arguments are still parsed by the caller with `json.loads`.

    Feeding only stores the piece; the properties parse what has arrived when read. While
    the content string streams, only the text that arrived after its last complete escape
    is decoded, so reading after every piece costs in proportion to the piece, not to the
    arguments so far.
    """

    CONTENT_KEY = "content"
    FILENAME_KEY = "plan_filename"

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
        except (_Refused, ValueError, RecursionError) as error:  # never in practice
            reading = _Reading(error=f"unreadable arguments: {error}")
        if reading is None:
            return
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
        quote = text.find('"')
        while quote >= 0 and _escaped_at(text, quote):
            quote = text.find('"', quote + 1)
        if quote >= 0:
            return False
        complete = _without_unfinished_escape(text)
        if complete:
            try:
                decoded = jiter.from_json(b'"' + complete.encode() + b'"', cache_mode="none")
            except (ValueError, UnicodeEncodeError):
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
