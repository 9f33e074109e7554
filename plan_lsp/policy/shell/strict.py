"""The `classified` rule set: the allow-list is the only wall, so a command passes only when
every part of it is understood.

1. `lexer.py` reads the command as bash would, within a small subset (simple commands,
   static words, `; && || | |&`, `>/dev/null`, `2>&1`, `< file`).
2. tree-sitter-bash reads it too; any error or missing node refuses, and both readings must
   put every word and redirection at the same place (a disagreement means one of them
   misreads the command, so it is refused).
3. Each simple command is checked against the allow-list (`argcheck.py`), with reads
   confined to the workspace roots (`paths.py`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from plan_lsp.policy.shell.argcheck import ArgCheck
from plan_lsp.policy.shell.lexer import LexError, Redirect, Token, lex_with_tokens
from plan_lsp.policy.shell.model import Findings
from plan_lsp.policy.shell.parser import parse, snippet_of_error
from plan_lsp.policy.shell.programs import program_problem

if TYPE_CHECKING:
    from tree_sitter import Node

    from plan_lsp.policy.shell.paths import PathPolicy

_WORD_NODES = frozenset({"word", "string", "raw_string", "concatenation", "number"})
_WORD_PARTS = frozenset({"word", "string", "raw_string", "string_content", "number", '"'})
_CONTAINERS = frozenset({"program", "list", "pipeline", "redirected_statement", "command"})
_SEPARATORS = frozenset({";", "&&", "||", "|", "|&", "\n"})
_OUTPUT_OPS = frozenset({">", ">>", "&>", "&>>"})
_SINK = "/dev/null"


def classify_strict(cmd: str, findings: Findings, policy: PathPolicy) -> None:
    try:
        commands, tokens = lex_with_tokens(cmd)
    except LexError as exc:
        findings.unproven(exc.reason)
        return
    if not commands:
        findings.unproven("the command line has no command in it")
        return
    root = parse(cmd)
    if root.has_error:
        findings.unproven(f"the command does not parse as complete bash{snippet_of_error(root)}")
        return
    disagreement = _cross_check(root, tokens)
    if disagreement is not None:
        findings.unproven(disagreement)
        return
    problem = policy.cwd_problem()
    if problem is not None:
        findings.unproven(problem)
        return
    check = ArgCheck(findings, policy, program_problem)
    for command in commands:
        for redirect in command.redirects:
            _redirect(redirect, findings, policy)
        check.simple(command.words)


def _redirect(r: Redirect, findings: Findings, policy: PathPolicy) -> None:
    target = r.target
    if target.glob:
        findings.unproven(f"redirection `{r.text}` has a glob as its target")
        return
    if r.op in _OUTPUT_OPS:
        if target.value.startswith(("/dev/tcp/", "/dev/udp/")):
            findings.add(
                frozenset({"write:network"}),
                f"`{r.text}` opens a network connection (write:network)",
            )
        elif target.value != _SINK:
            findings.add(
                frozenset({"write:filesystem"}),
                f"`{r.text}` writes to a file; only `/dev/null` is allowed (write:filesystem)",
            )
        return
    if r.op == ">&":
        if target.value in ("1", "2"):
            return
        if target.value == _SINK and r.fd is None:
            return
        findings.unproven(f"redirection `{r.text}` is not one of `2>&1`, `>&2`, `>&/dev/null`")
        return
    # "<": input from a file inside the workspace.
    if r.fd not in (None, 0):
        findings.unproven(f"redirection `{r.text}` reads into a descriptor other than stdin")
        return
    if target.value.startswith(("/dev/tcp/", "/dev/udp/")):
        findings.add(
            frozenset({"read:network"}), f"`{r.text}` opens a network connection (read:network)"
        )
        return
    problem = policy.read_problem(target.value)
    if problem is not None:
        findings.unproven(f"redirection `{r.text}`: {problem}")


def _cross_check(root: Node, mine: list[Token]) -> str | None:
    """Both readings must agree on where every command, word and redirection is."""
    theirs: list[Token] = []
    problem = _tree_tokens(root, theirs)
    if problem is not None:
        return problem
    if mine != theirs:
        return (
            "the two readings of this command (bash's rules and tree-sitter-bash) disagree "
            f"about where its words end{_first_difference(mine, theirs)}, so it is refused"
        )
    return None


def _first_difference(mine: list[Token], theirs: list[Token]) -> str:
    for a, b in zip(mine, theirs, strict=False):
        if a != b:
            return f" (at offset {min(a[1], b[1])})"
    return ""


def _tree_tokens(root: Node, out: list[Token]) -> str | None:
    stack: list[Node] = [root]
    while stack:
        node = stack.pop()
        kind = node.type
        if kind in _WORD_NODES:
            for part in _descendants(node):
                if part.type not in _WORD_PARTS:
                    return f"`{_text(node)}` contains `{_text(part)}`, which is not a static word"
            out.append(("word", node.start_byte, node.end_byte))
            continue
        if kind == "command":
            out.append(("command", node.start_byte, node.start_byte))
        if kind in _CONTAINERS or kind == "command_name":
            stack.extend(reversed(node.children))
        elif kind == "file_redirect":
            out.append(("redirect", node.start_byte, node.start_byte))
            stack.extend(reversed([c for c in node.children if c.type in _WORD_NODES]))
        elif kind == "comment" or (not node.is_named and kind in _SEPARATORS):
            continue
        else:
            return f"`{_text(node)[:40]}` ({kind}) is not in the allow-list's small bash subset"
    return None


def _descendants(node: Node) -> list[Node]:
    found: list[Node] = []
    stack = list(node.children)
    while stack:
        child = stack.pop()
        found.append(child)
        stack.extend(child.children)
    return found


def _text(node: Node) -> str:
    raw = node.text
    return raw.decode("utf-8", "replace") if raw is not None else ""
