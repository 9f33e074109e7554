"""Lines: a three-way merge that refuses when the two sides' changes touch, and the +/- line
counts of a change."""

from __future__ import annotations

from collections import Counter
from difflib import SequenceMatcher

Hunk = tuple[int, int, list[bytes]]


def text_lines(data: bytes) -> list[bytes] | None:
    """The lines of `data` (ends kept), or None for what is not UTF-8 text."""
    if b"\0" in data[:8192]:
        return None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return data.splitlines(keepends=True)


def _hunks(base: list[bytes], other: list[bytes]) -> list[Hunk]:
    matcher = SequenceMatcher(None, base, other, autojunk=False)
    codes = matcher.get_opcodes()
    return [(i1, i2, other[j1:j2]) for tag, i1, i2, j1, j2 in codes if tag != "equal"]


def merge3(base: bytes, ours: bytes, theirs: bytes) -> bytes | None:
    """`base` changed into `ours` by one side and into `theirs` by the other: both changes
    applied, or None when one is not text or their changed regions overlap or touch (the
    same change made by both sides counts once)."""
    lines = [text_lines(x) for x in (base, ours, theirs)]
    if any(x is None for x in lines):
        return None
    b, o, t = (x or [] for x in lines)
    mine, other = _hunks(b, o), _hunks(b, t)
    merged: list[Hunk] = list(mine)
    for hunk in other:
        if hunk in mine:
            continue
        if any(max(hunk[0], m[0]) <= min(hunk[1], m[1]) for m in mine):
            return None
        merged.append(hunk)
    out: list[bytes] = []
    at = 0
    for start, end, replacement in sorted(merged, key=lambda h: (h[0], h[1])):
        out += b[at:start]
        out += replacement
        at = end
    out += b[at:]
    return b"".join(out)


def line_counts(old: bytes | None, new: bytes | None) -> tuple[int, int]:
    """(added, removed) lines from `old` to `new` (None: absent); (0, 0) for binary files.
    Lines are compared as multisets: exact for edits, a moved line counts as unchanged."""
    before = text_lines(old) if old is not None else []
    after = text_lines(new) if new is not None else []
    if before is None or after is None:
        return 0, 0
    a, b = Counter(before), Counter(after)
    return sum((b - a).values()), sum((a - b).values())
