"""tree-sitter-bash, loaded on first use (the server starts without the grammar)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

_parser: Parser | None = None


def _get_parser() -> Parser:
    global _parser
    if _parser is None:
        import tree_sitter
        import tree_sitter_bash

        _parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
    return _parser


def node_text(node: Node) -> str:
    raw = node.text
    return raw.decode("utf-8", "replace") if raw is not None else ""


def descendants(node: Node) -> list[Node]:
    found: list[Node] = []
    stack = list(node.children)
    while stack:
        child = stack.pop()
        found.append(child)
        stack.extend(child.children)
    return found


def parse(source: str) -> Node:
    return _get_parser().parse(source.encode("utf-8")).root_node


def parse_only(source: str) -> bool:
    """Parse without classifying (for benchmarks): whether the tree has errors."""
    return parse(source).has_error


def first_error(root: Node) -> Node | None:
    """The first ERROR or missing node, found without recursion."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            return node
        stack.extend(reversed([c for c in node.children if c.has_error or c.is_missing]))
    return None


def snippet_of_error(root: Node) -> str:
    bad = first_error(root)
    if bad is None:
        return ""
    raw = bad.text or b""
    text = raw.decode("utf-8", "replace")[:40]
    return f" near `{text}`" if text else f" ({'missing ' if bad.is_missing else ''}{bad.type})"
