"""`sandboxed`: the sandbox is the wall, so only what shows an intent to change things (or
needs a network that is off) is refused, with the reason; the unknown runs in the sandbox.
"""

from __future__ import annotations

from plan_lsp.policy.shell.model import Findings
from plan_lsp.policy.shell.walker import walk_source

_WORD_BOUNDARY = frozenset(" \t\n;&|()<>")


def classify_sandboxed(cmd: str, findings: Findings) -> None:
    normalized = join_continuations(cmd)
    if normalized is None:
        findings.unproven(
            "a backslash-newline appears where this checker cannot tell how bash joins the lines"
        )
        normalized = cmd
    walk_source(normalized, findings, 0)


def join_continuations(src: str) -> str | None:
    """Remove backslash-newline pairs as bash does (tree-sitter keeps `-\\<newline>delete`
    as two words); None where that depends on context this scanner does not track."""
    if "\\\n" not in src:
        return src
    if "<<" in src:
        return None
    out: list[str] = []
    state = "plain"
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        nxt = src[i + 1] if i + 1 < n else ""
        if state in ("plain", "double") and c == "\\":
            if nxt == "\n":
                i += 2
                continue
            out.append(src[i : i + 2])
            i += 2
            continue
        if state == "plain":
            if c == "'":
                state = "single"
            elif c == '"':
                state = "double"
            elif c == "$" and nxt == "'":
                out.append("$'")
                state = "ansi"
                i += 2
                continue
            elif c == "#" and (not out or out[-1][-1] in _WORD_BOUNDARY):
                state = "comment"
            elif c == "`":
                return None
        elif state == "double":
            if c == '"':
                state = "plain"
            elif c == "`" or (c == "$" and nxt == "("):
                return None
        elif state in ("single", "ansi"):
            if c == "\\" and nxt == "\n":
                return None
            if state == "ansi" and c == "\\":
                out.append(src[i : i + 2])
                i += 2
                continue
            if c == "'":
                state = "plain"
        elif state == "comment" and c == "\n":
            state = "plain"
        out.append(c)
        i += 1
    return "".join(out)
