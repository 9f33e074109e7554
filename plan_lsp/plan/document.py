"""The plan document: its limits, and how its text splits into lines.

The plan's text is kept byte-exact: no newline translation on read or write, because the
editor buffer is the truth and what the user approved is hashed. Plans are written by the
one safe writer (`policy.safe_fs`, through `policy.plan_paths.write_plan_file`), never here.
"""

from __future__ import annotations

import re

MAX_PLAN_CHARS = 50_000
DEFAULT_PLAN_NAME = "PLAN.md"

# LSP line terminators (\n, \r\n, \r), as opposed to str.splitlines' longer list.
_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def split_lines(text: str) -> list[str]:
    """Lines with their terminators kept, split the way LSP counts lines.

    `"".join(split_lines(t)) == t` for every `t`.
    """
    return _LINE_RE.findall(text)


def strip_line_ending(line: str) -> tuple[str, str]:
    """Split one line from `split_lines` into (content, terminator)."""
    if line.endswith("\r\n"):
        return line[:-2], "\r\n"
    if line.endswith(("\n", "\r")):
        return line[:-1], line[-1]
    return line, ""


_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def fenced_code_mask(lines: list[str]) -> list[bool]:
    """For each line, True if it belongs to a fenced code block (fence lines included).

    Markdown fences: three or more backticks or tildes, closed by the same character at
    least as long; an unclosed fence runs to the end. Code is quoted text, not plan prose.
    """
    mask: list[bool] = []
    fence: str | None = None
    for line in lines:
        match = _FENCE_RE.match(line)
        if fence is None:
            if match:
                fence = match.group(1)
            mask.append(fence is not None)
        else:
            mask.append(True)
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                rest = line[match.end() :].strip()
                if not rest:
                    fence = None
    return mask
