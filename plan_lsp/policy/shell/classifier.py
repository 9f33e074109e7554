"""classify_command: parse with the bash grammar, walk every command, decide."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from plan_lsp.policy.shell.model import PLAN_ALLOWED_CAPABILITIES, Classification, Findings
from plan_lsp.policy.shell.walker import Walker

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

_parser: Parser | None = None
# Control characters bash would pass through silently; tab and newline are ordinary syntax.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _get_parser() -> Parser:
    global _parser
    if _parser is None:
        # Imported on first use: the server starts without loading the grammar.
        import tree_sitter
        import tree_sitter_bash

        _parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
    return _parser


def parse_only(source: str) -> bool:
    """Parse without classifying (for benchmarks): whether the tree has errors."""
    return _get_parser().parse(source.encode("utf-8")).root_node.has_error


def classify_command(
    cmd: str, allowed: frozenset[str] = PLAN_ALLOWED_CAPABILITIES
) -> Classification:
    findings = Findings()
    if not cmd.strip():
        findings.deny("the command is empty")
    else:
        bad = _CONTROL.search(cmd)
        if bad is not None:
            findings.deny(f"the command contains the control character {bad.group(0)!r}")
        else:
            normalized = join_continuations(cmd)
            if normalized is None:
                findings.deny(
                    "a backslash-newline appears where bash would not join the lines "
                    "(inside quotes, a here-document or a backquote), so the command is ambiguous"
                )
            else:
                walk_source(normalized, findings, 0)
    return findings.decide(frozenset(allowed))


_WORD_BOUNDARY = frozenset(" \t\n;&|()<>")


def join_continuations(src: str) -> str | None:
    """Remove backslash-newline pairs the way bash does before it splits words.

    tree-sitter keeps `-\\<newline>delete` as two words where bash sees `-delete`, so the
    tree is only trusted on the joined text. Where joining depends on context this scanner
    does not track exactly (single quotes, here-documents, backquotes, substitutions inside
    double quotes), returns None and the command is denied."""
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


def walk_source(source: str, findings: Findings, depth: int) -> None:
    root = _get_parser().parse(source.encode("utf-8")).root_node
    if root.has_error:
        bad = _first_error(root)
        where = f" near `{_snippet(bad)}`" if bad is not None else ""
        findings.deny(f"the command does not parse as complete bash{where}")
        return
    Walker(findings, depth).statement(root)


def _first_error(node: Node) -> Node | None:
    if node.is_error or node.is_missing:
        return node
    for child in node.children:
        if child.has_error or child.is_missing:
            found = _first_error(child)
            if found is not None:
                return found
    return None


def _snippet(node: Node) -> str:
    raw = node.text or b""
    text = raw.decode("utf-8", "replace")
    return text[:40] if text else node.type
