"""Review notes written in the plan buffer, for clients without an input box.

Syntax: a line starting with `> feedback:` (optionally indented; `feedback` in any case)
starts a note; the text after the marker is the note. Lines right below it that start with
`>` but not with a new marker continue the same note. Lines inside fenced code blocks are
never notes. "Reject with feedback" sends all notes, in document order, one per paragraph;
the revision that follows rewrites the plan.

    1. Add the endpoint
    > feedback: use the existing router,
    > not a new one
"""

from __future__ import annotations

import re

from plan_lsp.plan.document import fenced_code_mask, split_lines, strip_line_ending

_MARKER_RE = re.compile(r"^\s*>\s?feedback:\s?(?P<note>.*)$", re.IGNORECASE)
_CONTINUATION_RE = re.compile(r"^\s*>\s?(?P<note>.*)$")


def _note_lines(text: str) -> tuple[list[str], list[tuple[int, bool, str]]]:
    """The lines of `text`, and (index, starts_a_note, note text) for each note line."""
    lines = split_lines(text)
    found: list[tuple[int, bool, str]] = []
    in_note = False
    for index, (line, in_code) in enumerate(zip(lines, fenced_code_mask(lines), strict=True)):
        content = strip_line_ending(line)[0]
        marker = None if in_code else _MARKER_RE.match(content)
        if marker:
            found.append((index, True, marker.group("note").strip()))
            in_note = True
            continue
        continuation = None if in_code or not in_note else _CONTINUATION_RE.match(content)
        if continuation:
            found.append((index, False, continuation.group("note").strip()))
        else:
            in_note = False
    return lines, found


def extract_feedback(text: str) -> str | None:
    """All review notes joined (notes separated by a blank line), or None if there are none."""
    notes: list[list[str]] = []
    for _, starts, note in _note_lines(text)[1]:
        if starts:
            notes.append([])
        if note:
            notes[-1].append(note)
    joined = ["\n".join(parts) for parts in notes if parts]
    return "\n\n".join(joined) if joined else None
