"""Review comments on a plan's lines: kept with the lines they are about and their quoted
text; sent to the model with those lines; after the revision re-anchored through the
revision's line diff (difflib) and marked `addressed` (their lines changed) or `open`
(unchanged). Lines are zero-based; `end` is inclusive."""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass
from typing import Literal

from plan_lsp.plan.document import split_lines, strip_line_ending
from plan_lsp.plan.review import notes

Status = Literal["open", "addressed"]


@dataclass
class Comment:
    id: str
    start: int
    end: int
    quote: str
    text: str
    status: Status = "open"
    sent: bool = False


def plain_lines(text: str) -> list[str]:
    return [strip_line_ending(line)[0] for line in split_lines(text)]


def quote_of(lines: list[str], start: int, end: int) -> str:
    return "\n".join(lines[start : end + 1])


def new_comment(text: str, start: int, end: int, note: str, typed: bool = False) -> Comment:
    lines = plain_lines(text)
    start = max(0, min(start, len(lines) - 1))
    end = max(start, min(end, len(lines) - 1))
    quote = quote_of(lines, start, end)
    digest = hashlib.sha256(f"{start}\0{quote}\0{note}".encode()).hexdigest()[:10]
    # "t": a `> comment:` line of the buffer; "c": kept by the server
    return Comment(("t" if typed else "c") + digest, start, end, quote, note.strip())


def typed_comments(text: str) -> list[Comment]:
    """The `> comment:` notes of `text`, each about the line above it."""
    return [
        new_comment(text, n.about, n.about, n.text, typed=True)
        for n in notes(text)
        if n.kind == "comment" and n.text
    ]


def remap(old: list[str], new: list[str], start: int, end: int) -> tuple[int, int, bool]:
    """Where lines `start..end` of `old` are in `new`, and whether they are unchanged. A
    changed line goes to the most similar line of what replaced it."""
    ops = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
    last = max(len(new) - 1, 0)

    def at(i: int) -> tuple[int, bool]:
        for tag, i1, i2, j1, j2 in ops:
            if i1 <= i < i2:  # lines inserted before `i` (i1 == i2) do not touch it
                if tag == "equal":
                    return j1 + i - i1, True
                similar = [
                    difflib.SequenceMatcher(None, old[i], new[j]).ratio() for j in range(j1, j2)
                ]
                return min(j1 + (similar.index(max(similar)) if similar else 0), last), False
        return last, False

    moved = [at(i) for i in range(start, end + 1)]
    return moved[0][0], max(moved[0][0], moved[-1][0]), all(same for _, same in moved)


def follow(comments: list[Comment], old_text: str, new_text: str, settle: bool) -> None:
    """Move comments from `old_text` to `new_text`. `settle` (a revision answered them):
    a sent comment becomes addressed when its lines changed, open when they did not;
    otherwise (the user edited) a comment keeps its status and quotes its lines' new text."""
    old, new = plain_lines(old_text), plain_lines(new_text)
    if old == new and not settle:
        return
    for c in comments:
        c.start, c.end, same = remap(old, new, c.start, c.end)
        if settle and c.sent:
            c.status = "open" if same else "addressed"
        if not settle or same:
            c.quote = quote_of(new, c.start, c.end)


def feedback_text(comments: list[Comment]) -> str:
    """What the model receives: each comment with the lines it is attached to."""
    parts = ["Review comments on the plan, each with the plan lines it is about:"]
    for number, c in enumerate(comments, 1):
        where = f"line {c.start + 1}" if c.start == c.end else f"lines {c.start + 1}-{c.end + 1}"
        quoted = "\n".join(f"> {line}" for line in c.quote.split("\n"))
        parts.append(f"{number}. On {where}:\n{quoted}\nComment: {c.text}")
    parts.append("Revise the plan to answer every comment (remove the `> comment:` lines).")
    return "\n\n".join(parts)
