"""Text positions as LSP counts them, in any negotiated encoding.

LSP lines end at `\\n`, `\\r\\n` or `\\r` only (not U+2028, as `str.splitlines` has it);
columns count code units of the negotiated encoding, while Python indexes code points.
Out-of-range positions clamp as the specification asks (end of line, end of text, a
character's start).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Encoding = Literal["utf-8", "utf-16", "utf-32"]

_BREAK = re.compile(r"\r\n|\r|\n")


def units(text: str, encoding: Encoding) -> int:
    """How many code units of `encoding` `text` takes (unpaired surrogates count as one
    UTF-16 unit / three UTF-8 bytes, as their lone encodings do)."""
    if encoding == "utf-32":
        return len(text)
    if text.isascii():
        return len(text)
    if encoding == "utf-16":
        return len(text.encode("utf-16-le", "surrogatepass")) // 2
    return len(text.encode("utf-8", "surrogatepass"))


def _char_units(char: str, encoding: Encoding) -> int:
    code = ord(char)
    if encoding == "utf-32" or code < 0x80:
        return 1
    if encoding == "utf-16":
        return 2 if code > 0xFFFF else 1
    if code < 0x800:
        return 2
    return 3 if code <= 0xFFFF else 4


@dataclass(frozen=True)
class Position:
    """An LSP position: zero-based line and column in code units of some encoding."""

    line: int
    character: int


class LineIndex:
    """Line starts of one text, for converting offsets and positions both ways."""

    def __init__(self, text: str) -> None:
        self.text = text
        # starts[i]: code-point offset where line i begins; ends[i]: where its content ends
        self.starts = [0]
        self.ends: list[int] = []
        for match in _BREAK.finditer(text):
            self.ends.append(match.start())
            self.starts.append(match.end())
        self.ends.append(len(text))

    @property
    def line_count(self) -> int:
        return len(self.starts)

    def line_of(self, offset: int) -> int:
        return bisect_right(self.starts, offset) - 1

    def position(self, offset: int, encoding: Encoding) -> Position:
        """The position of code-point `offset` (0 ≤ offset ≤ len(text))."""
        if not 0 <= offset <= len(self.text):
            raise ValueError(f"offset {offset} outside text of length {len(self.text)}")
        line = self.line_of(offset)
        start = self.starts[line]
        # An offset between \r and \n is not a position; it counts as the line's end.
        column_end = min(offset, self.ends[line])
        return Position(line, units(self.text[start:column_end], encoding))

    def offset(self, line: int, character: int, encoding: Encoding) -> int:
        """The code-point offset of a client position, clamped as the specification says."""
        if line < 0 or character < 0:
            raise ValueError(f"negative position ({line}, {character})")
        if line >= self.line_count:
            return len(self.text)
        start, end = self.starts[line], self.ends[line]
        if encoding == "utf-32":
            return min(start + character, end)
        counted = 0
        index = start
        while index < end:
            width = _char_units(self.text[index], encoding)
            if counted + width > character:
                break
            counted += width
            index += 1
        return index


@dataclass(frozen=True)
class ContentChange:
    """One `TextDocumentContentChangeEvent`: `start`/`end` None means the whole text."""

    text: str
    start: Position | None = None
    end: Position | None = None


def apply_changes(text: str, changes: Iterable[ContentChange], encoding: Encoding) -> str:
    """Apply `didChange` content changes in order, each against the result of the last."""
    for change in changes:
        if change.start is None or change.end is None:
            text = change.text
            continue
        index = LineIndex(text)
        start = index.offset(change.start.line, change.start.character, encoding)
        end = index.offset(change.end.line, change.end.character, encoding)
        if end < start:
            start, end = end, start
        text = text[:start] + change.text + text[end:]
    return text


def line_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    """Widen the code-point range [start, end) to whole lines: from the start of `start`'s
    line to the start of the line after `end` (or the end of the text)."""
    index = LineIndex(text)
    line_start = index.starts[index.line_of(start)]
    end_line = index.line_of(end)
    if end == index.starts[end_line] and end > start:
        return line_start, end
    if end_line + 1 < index.line_count:
        return line_start, index.starts[end_line + 1]
    return line_start, len(text)


# -- line models ---------------------------------------------------------------------------
#
# Editors hold text as lines. Vim and Neovim keep a final line break on every buffer (an
# empty file is "\n", and a text that ends mid-line is shown and written with one), and a
# buffer whose file uses CRLF reports and saves CRLF whatever line breaks an edit carried.
# Text the server puts into a buffer is first given the buffer's own line model, so what
# the editor holds is exactly what the server expects.


def line_break_of(text: str) -> str | None:
    """The text's first line break (`"\\r\\n"`, `"\\n"` or `"\\r"`), or None."""
    found = _BREAK.search(text)
    return found.group() if found else None


def only_line_break(text: str) -> str | None:
    """The one line break every line of `text` ends with, or None (none, or mixed)."""
    found = set(_BREAK.findall(text))
    return found.pop() if len(found) == 1 else None


def ends_with_line_break(text: str) -> bool:
    return text.endswith(("\n", "\r"))


def final_line_break(text: str) -> str:
    """The line break `text` ends with (`"\r\n"`, `"\n"` or `"\r"`), or `""`."""
    if text.endswith("\r\n"):
        return "\r\n"
    return text[-1:] if ends_with_line_break(text) else ""


def with_line_breaks(text: str, style: str | None) -> str:
    """`text` with every line break written as `style` (unchanged when `style` is None)."""
    if style is None:
        return text
    return _BREAK.sub(lambda _match: style, text)


def as_lines(text: str, style: str | None = None) -> str:
    """`text` as a line-based editor holds it: every line ended by a line break (`style`,
    else the text's own, else `"\\n"`); the empty text stays empty."""
    style = style or line_break_of(text) or "\n"
    text = with_line_breaks(text, style)
    if text and not ends_with_line_break(text):
        text += style
    return text
