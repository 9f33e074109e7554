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

import re
from dataclasses import dataclass

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


def apply_change(text: str, change: TextChange) -> str:
    """Apply a change by its code-point offsets (what the client does by positions)."""
    return text[: change.start_offset] + change.text + text[change.end_offset :]


# -- incremental JSON argument reader ----------------------------------------------------

_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n",
                   "r": "\r", "t": "\t"}  # fmt: skip
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_STRING_STOP = re.compile(r'["\\]')
_WHITESPACE = " \t\r\n"


class _StringDecoder:
    """Decodes one JSON string body fed in pieces; `parts` hold only complete characters.

    A `\\uD800`-`\\uDBFF` escape is held back until the input says whether a low surrogate
    escape follows (then the pair is one character, as `json.loads` decodes it).
    """

    def __init__(self) -> None:
        self.parts: list[str] = []
        self._pending = ""  # the start of an escape whose end has not arrived yet
        self._high: str | None = None  # a decoded high surrogate waiting for its pair
        self.closed = False
        self.error: str | None = None

    def _flush_high(self) -> None:
        if self._high is not None:
            self.parts.append(self._high)
            self._high = None

    def _emit(self, text: str) -> None:
        if text:
            self._flush_high()
            self.parts.append(text)

    def feed(self, chunk: str, index: int) -> int:
        """Consume from `chunk[index:]`; return the index after the closing quote (or end)."""
        if self._pending:
            # An escape never needs more than 6 characters; complete it from this chunk.
            escape = self._pending + chunk[index : index + 6 - len(self._pending)]
            used = self._decode_escape(escape)
            if used == 0:  # still incomplete: the chunk is used up
                self._pending = escape
                return len(chunk)
            index += used - len(self._pending)
            self._pending = ""
        while index < len(chunk) and self.error is None:
            stop = _STRING_STOP.search(chunk, index)
            if stop is None:
                self._emit(chunk[index:])
                return len(chunk)
            self._emit(chunk[index : stop.start()])
            index = stop.start()
            if chunk[index] == '"':
                self._flush_high()
                self.closed = True
                return index + 1
            used = self._decode_escape(chunk[index : index + 6])
            if used == 0:
                self._pending = chunk[index:]
                return len(chunk)
            index += used
        return len(chunk) if self.error is not None else index

    def _decode_escape(self, escape: str) -> int:
        """Decode the escape `escape` starts with (a backslash, maybe cut short).

        Returns the characters consumed, or 0 when more input is needed.
        """
        if len(escape) < 2:
            return 0
        kind = escape[1]
        if kind in _SIMPLE_ESCAPES:
            self._emit(_SIMPLE_ESCAPES[kind])
            return 2
        if kind != "u":
            self.error = f"invalid escape \\{kind}"
            return 2
        digits = escape[2:6]
        if any(digit not in _HEX_DIGITS for digit in digits):
            self.error = "invalid \\u escape"
            return len(escape)
        if len(digits) < 4:
            return 0
        code = int(digits, 16)
        if 0xDC00 <= code <= 0xDFFF and self._high is not None:
            high = ord(self._high)
            self._high = None
            self.parts.append(chr(0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00)))
        elif 0xD800 <= code <= 0xDBFF:
            self._flush_high()
            self._high = chr(code)
        else:
            self._emit(chr(code))
        return 6

    def text(self) -> str:
        # Compacting on read keeps repeated reads of a growing draft to one copy each.
        if len(self.parts) > 1:
            self.parts[:] = ["".join(self.parts)]
        return self.parts[0] if self.parts else ""


class PartialArgumentsReader:
    """Reads the `plan_write` arguments JSON as it streams, in pieces of any size.

    `content_so_far` is the decoded `content` string so far (complete escapes only, so every
    value is a prefix of the next); `plan_filename` is set once that string is complete.
    Other keys are skipped, whatever their values. A repeated key restarts its value, as
    `json.loads` keeps the last. Malformed input sets `error` and stops reading; the final
    arguments are still parsed by the caller with `json.loads`.
    """

    CONTENT_KEY = "content"
    FILENAME_KEY = "plan_filename"

    def __init__(self) -> None:
        self._state = "start"
        self._key: _StringDecoder | None = None
        self._value: _StringDecoder | None = None
        self._current_key = ""
        self._content: _StringDecoder | None = None
        self._skip_depth = 0
        self._skip_in_string = False
        self._skip_escape = False
        self.plan_filename: str | None = None
        self.content_started = False
        self.content_complete = False
        self.done = False
        self.error: str | None = None

    @property
    def content_so_far(self) -> str:
        return "" if self._content is None else self._content.text()

    def _fail(self, message: str) -> None:
        self.error = message
        self._state = "failed"

    def feed(self, chunk: str) -> None:
        index = 0
        while index < len(chunk) and self._state not in ("failed", "done"):
            index = self._step(chunk, index)
        if self._state == "done":
            self.done = True

    def _step(self, chunk: str, index: int) -> int:
        state = self._state
        if state in ("key", "value"):
            decoder = self._key if state == "key" else self._value
            assert decoder is not None
            index = decoder.feed(chunk, index)
            if decoder.error is not None:
                self._fail(decoder.error)
            elif decoder.closed:
                self._string_closed(state, decoder)
            return index
        if state == "skip":
            return self._skip(chunk, index)
        if state == "scalar":
            while index < len(chunk) and chunk[index] not in ",}" + _WHITESPACE:
                index += 1
            if index < len(chunk):
                self._state = "after_value"
            return index
        char = chunk[index]
        if char in _WHITESPACE:
            return index + 1
        if state == "start":
            if char == "{":
                self._state = "key_or_end"
            else:
                self._fail("arguments are not a JSON object")
        elif state == "key_or_end":
            self._expect_key(char)
        elif state == "colon":
            if char == ":":
                self._state = "value_start"
            else:
                self._fail("expected ':' after a key")
        elif state == "value_start":
            self._start_value(char)
            return index if self._state == "scalar" else index + 1
        elif state == "after_value":
            if char == ",":
                self._state = "key_required"
            elif char == "}":
                self._state = "done"
            else:
                self._fail("expected ',' or '}' after a value")
        elif state == "key_required":
            if char == '"':
                self._key = _StringDecoder()
                self._state = "key"
            else:
                self._fail("expected a key")
        return index + 1

    def _expect_key(self, char: str) -> None:
        if char == '"':
            self._key = _StringDecoder()
            self._state = "key"
        elif char == "}":
            self._state = "done"
        else:
            self._fail("expected a key or '}'")

    def _start_value(self, char: str) -> None:
        if char == '"':
            self._value = _StringDecoder()
            if self._current_key == self.CONTENT_KEY:
                self._content = self._value  # a repeated key restarts, like json.loads
                self.content_started = True
                self.content_complete = False
            self._state = "value"
        elif char in "{[":
            self._skip_depth = 1
            self._skip_in_string = False
            self._skip_escape = False
            self._state = "skip"
        else:
            if self._current_key == self.FILENAME_KEY:
                self.plan_filename = None  # null (or a non-string) means the default name
            self._state = "scalar"

    def _string_closed(self, state: str, decoder: _StringDecoder) -> None:
        if state == "key":
            self._current_key = decoder.text()
            self._state = "colon"
            return
        if self._current_key == self.CONTENT_KEY:
            self.content_complete = True
        elif self._current_key == self.FILENAME_KEY:
            self.plan_filename = decoder.text()
        self._value = None
        self._state = "after_value"

    def _skip(self, chunk: str, index: int) -> int:
        """Skip a nested object/array value, minding strings and escapes inside it."""
        while index < len(chunk):
            char = chunk[index]
            index += 1
            if self._skip_in_string:
                if self._skip_escape:
                    self._skip_escape = False
                elif char == "\\":
                    self._skip_escape = True
                elif char == '"':
                    self._skip_in_string = False
            elif char == '"':
                self._skip_in_string = True
            elif char in "{[":
                self._skip_depth += 1
            elif char in "}]":
                self._skip_depth -= 1
                if self._skip_depth == 0:
                    self._state = "after_value"
                    return index
        return index
