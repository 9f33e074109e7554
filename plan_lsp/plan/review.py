"""Review notes written in the plan buffer, for clients without an input box (docs/plans.md).

A line starting with `> feedback:` or `> comment:` (optionally indented, the word in any case)
starts a note; the lines right below it that start with `>` but no new marker continue it.
Lines in fenced code are never notes. "Reject with feedback" sends every `feedback` note in
document order; a `comment` note is about the nearest line above it that is neither blank nor
a note (`plan/comments.py`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from plan_lsp.plan.document import fenced_code_mask, split_lines, strip_line_ending

_MARKER_RE = re.compile(r"^\s*>\s?(?P<kind>feedback|comment):\s?(?P<note>.*)$", re.IGNORECASE)
_CONTINUATION_RE = re.compile(r"^\s*>\s?(?P<note>.*)$")


@dataclass
class Note:
    kind: str  # "feedback" | "comment"
    line: int  # the marker's line
    about: int  # the line it is about (comments): nearest line above, not blank, not a note
    parts: list[str]

    @property
    def text(self) -> str:
        return "\n".join(p for p in self.parts if p)


def notes(text: str) -> list[Note]:
    """Every note of `text`, in document order (empty ones too)."""
    lines = split_lines(text)
    found: list[Note] = []
    current: Note | None = None
    about = -1
    for index, (line, in_code) in enumerate(zip(lines, fenced_code_mask(lines), strict=True)):
        content = strip_line_ending(line)[0]
        marker = None if in_code else _MARKER_RE.match(content)
        if marker:
            kind = marker.group("kind").lower()
            current = Note(kind, index, about if about >= 0 else index, [])
            current.parts.append(marker.group("note").strip())
            found.append(current)
            continue
        continuation = None if in_code or current is None else _CONTINUATION_RE.match(content)
        if continuation and current is not None:
            current.parts.append(continuation.group("note").strip())
            continue
        current = None
        if content.strip():
            about = index
    return found


def extract_feedback(text: str) -> str | None:
    """All feedback notes joined (notes separated by a blank line), or None if there are none."""
    joined = [n.text for n in notes(text) if n.kind == "feedback" and n.text]
    return "\n\n".join(joined) if joined else None
