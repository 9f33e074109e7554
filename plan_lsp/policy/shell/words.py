"""Turning a tree-sitter word node into what bash would pass to the command.

A word is *static* when its value is known before the command runs. Expansions,
substitutions, globs and brace expansions make it dynamic: its value is unknown, and an
unquoted one may even become several words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from plan_lsp.policy.shell.parser import node_text

if TYPE_CHECKING:
    from tree_sitter import Node

_GLOB_CHARS = frozenset("*?[")
_BRACE = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")
_ASSIGNING_OPERATORS = frozenset({"=", ":=", "@"})
_ESCAPED = re.compile(r"\\(.)", re.S)
# Inside double quotes a backslash escapes only these (and joins lines before a newline).
_DQ_ESCAPED = re.compile(r'\\([$`"\\\n])')


@dataclass(slots=True)
class Word:
    text: str
    # None when the value is only known at run time.
    value: str | None
    # An unquoted glob or brace expansion: bash may replace it with any file names.
    glob: bool = False
    # Proven to stay one word that does not start with `-` (so it cannot act as a flag).
    operand_safe: bool = False


class WordSink(Protocol):
    """Where a word sends what it finds inside itself."""

    def nested(self, node: Node) -> None:
        """A command or process substitution to classify as a command line."""

    def refuse(self, reason: str) -> None:
        """Something in the word that must not run."""

    def assigns(self, reason: str) -> None:
        """The word assigns a shell variable."""


_PLAIN_SPECIAL = frozenset("\\*?[{")


def resolve(node: Node, sink: WordSink) -> Word:
    kind = node.type
    text = node_text(node)
    # Fast paths for the common cases: a bare word without escapes or globs, 'quoted'.
    if kind == "word" and _PLAIN_SPECIAL.isdisjoint(text):
        return Word(text, text, False, not text.startswith("-"))
    if kind == "raw_string":
        inner = text[1:-1]
        return Word(text, inner, False, not inner.startswith("-"))
    parts: list[str] = []
    unquoted: list[str] = []
    state = _State()
    _collect(node, sink, parts, unquoted, state)
    if _BRACE.search("".join(unquoted)):
        # Where the braces sit is not tracked: assume they may open the word.
        state.glob = True
        state.static_prefix_len = 0
    value = None if state.dynamic or state.glob else "".join(parts)
    if value is not None:
        operand_safe = not value.startswith("-")
    else:
        # A fixed prefix before anything dynamic keeps the word from starting with `-`,
        # as long as bash cannot split it into several words.
        prefix = "".join(parts[: state.static_prefix_len])
        operand_safe = bool(prefix) and not prefix.startswith("-") and not state.splits
    return Word(text, value, state.glob, operand_safe)


@dataclass(slots=True)
class _State:
    dynamic: bool = False
    glob: bool = False
    splits: bool = False
    static_prefix_len: int = -1

    def mark_dynamic(self, parts: list[str], *, splits: bool = False, glob: bool = False) -> None:
        """From here on the value is unknown: an unquoted expansion may split into words; a
        glob's every resulting word still starts with the fixed prefix."""
        if not self.dynamic and self.static_prefix_len < 0:
            self.static_prefix_len = len(parts)
        self.dynamic = True
        self.splits |= splits
        self.glob |= glob


def _collect(
    node: Node, sink: WordSink, parts: list[str], unquoted: list[str], state: _State
) -> None:
    kind = node.type
    if kind == "word" or kind == "number":
        raw = node_text(node)
        value, has_glob = _unescape_unquoted(raw)
        if has_glob:
            # The fixed text before the first glob character still counts as a prefix.
            cut = min(raw.find(c) for c in _GLOB_CHARS if c in raw) if "\\" not in raw else 0
            parts.append(raw[:cut])
            state.mark_dynamic(parts, glob=True)
            value = value[cut:]
        parts.append(value)
        unquoted.append(raw)
    elif kind == "raw_string":
        parts.append(node_text(node)[1:-1])
        unquoted.append("_")
    elif kind == "string":
        for child in node.named_children:
            if child.type == "string_content":
                parts.append(_DQ_ESCAPED.sub(_unescape, node_text(child)))
            else:
                _dynamic_piece(child, sink, parts, state, quoted=True)
        unquoted.append("_")
    elif kind == "ansi_c_string":
        body = node_text(node)[2:-1]
        if "\\" in body:
            state.mark_dynamic(parts)
        parts.append(body)
        unquoted.append("_")
    elif kind == "concatenation":
        for child in node.children:
            _collect(child, sink, parts, unquoted, state)
    elif kind in ("brace_expression", "extglob_pattern"):
        state.mark_dynamic(parts, glob=True)
        parts.append(node_text(node))
    else:
        _dynamic_piece(node, sink, parts, state, quoted=False)
        unquoted.append("_")


def _dynamic_piece(
    node: Node, sink: WordSink, parts: list[str], state: _State, quoted: bool
) -> None:
    kind = node.type
    if kind in ("command_substitution", "process_substitution"):
        sink.nested(node)
    elif kind in ("simple_expansion", "expansion"):
        _check_expansion(node, sink)
    elif kind == "translated_string":
        for child in node.named_children:
            if child.type != "string_content":
                _dynamic_piece(child, sink, parts, state, quoted=True)
    elif kind == "arithmetic_expansion":
        sink.refuse(
            f"arithmetic expansion `{node_text(node)}` can run commands hidden in variable values"
        )
    else:
        sink.refuse(f"`{node_text(node)}` is a shell construct this checker does not understand")
    state.mark_dynamic(parts, splits=not quoted)


def _check_expansion(node: Node, sink: WordSink) -> None:
    for child in node.children:
        kind = child.type
        if not child.is_named:
            if kind in _ASSIGNING_OPERATORS:
                sink.assigns(f"`{node_text(node)}` assigns a shell variable")
            continue
        if kind in ("variable_name", "special_variable_name", "regex"):
            continue
        if kind == "subscript":
            index = child.child_by_field_name("index")
            if index is None or (
                node_text(index) not in ("@", "*")
                and not (node_text(index).isascii() and node_text(index).isdigit())
            ):
                sink.refuse(
                    f"array index in `{node_text(node)}` is evaluated as arithmetic, "
                    "which can run commands hidden in variable values"
                )
            continue
        # The rest of an expansion is itself a word: `${x:-$(cmd)}`.
        resolve(child, sink)


def _unescape(match: re.Match[str]) -> str:
    """A backslash-newline joins lines; any other escaped character stands for itself."""
    return "" if match.group(1) == "\n" else match.group(1)


def _unescape_unquoted(text: str) -> tuple[str, bool]:
    """The value, and whether an unescaped glob character is in it."""
    has_glob = any(c in _GLOB_CHARS for c in _ESCAPED.sub("", text))
    return _ESCAPED.sub(_unescape, text), has_glob
