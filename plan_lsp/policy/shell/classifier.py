"""classify_command: parse with the bash grammar, walk every command, decide."""

from __future__ import annotations

from typing import TYPE_CHECKING

from plan_lsp.policy.shell.model import PLAN_ALLOWED_CAPABILITIES, Classification, Findings
from plan_lsp.policy.shell.walker import Walker

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

_parser: Parser | None = None
# Control characters bash would pass through silently; tab and newline are ordinary syntax.
_ALLOWED_CONTROL = frozenset("\t\n")


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
        bad = next((c for c in cmd if (c < " " and c not in _ALLOWED_CONTROL) or c == "\x7f"), None)
        if bad is not None:
            findings.deny(f"the command contains the control character {bad!r}")
        else:
            walk_source(cmd, findings, 0)
    return findings.decide(frozenset(allowed))


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
