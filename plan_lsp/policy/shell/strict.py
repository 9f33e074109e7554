"""The `classified` rule set: the allow-list is the only wall, so a command passes only when
every part is understood: `lexer.py` and tree-sitter-bash must both read it without error
and put every word and redirection at the same place, then each simple command passes
`argcheck.py` with reads confined to the roots (`paths.py`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from plan_lsp.policy.shell.argcheck import ArgCheck
from plan_lsp.policy.shell.compound import (
    STATIC_PARTS,
    WORD_NODES,
    FlowError,
    flatten,
    needs_flow,
)
from plan_lsp.policy.shell.lexer import LexError, Redirect, SWord, Token, lex_with_tokens
from plan_lsp.policy.shell.model import Findings
from plan_lsp.policy.shell.parser import descendants, node_text, parse, snippet_of_error

if TYPE_CHECKING:
    from tree_sitter import Node

    from plan_lsp.policy.shell.paths import PathPolicy

_CONTAINERS = frozenset({"program", "list", "pipeline", "redirected_statement", "command"})
_SEPARATORS = frozenset({";", "&&", "||", "|", "|&", "\n"})
_OUTPUT_OPS = frozenset({">", ">>", "&>", "&>>"})
_SINK = "/dev/null"


def classify_strict(cmd: str, findings: Findings, policy: PathPolicy) -> None:
    try:
        commands, tokens = lex_with_tokens(cmd)
    except LexError as exc:
        root = parse(cmd)
        if not root.has_error and needs_flow(root):
            _classify_flow(cmd, root, findings, policy)
        else:
            findings.unproven(str(exc))
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
    if needs_flow(root):
        _classify_flow(cmd, root, findings, policy)
        return
    problem = policy.cwd_problem()
    if problem is not None:
        findings.unproven(problem)
        return
    check = ArgCheck(findings, policy)
    for command in commands:
        for redirect in command.redirects:
            _redirect(redirect, findings, policy)
        check.simple(command.words)


# `cd` may lead to this many different directories in one command line.
MAX_DIRECTORIES = 16


def _classify_flow(cmd: str, root: Node, findings: Findings, policy: PathPolicy) -> None:
    """Loops, conditionals, groups, `[ ]`, here-documents, `cd` (`compound.py`): every simple
    command that may run is checked alone, from every directory it may run in."""
    problem = policy.cwd_problem()
    if problem is not None:
        findings.unproven(problem)
        return

    def expand(pattern: str) -> list[str] | None:
        found = policy.expand(pattern)
        return None if found is None else [shown for shown, _ in found]

    try:
        pieces = flatten(cmd, root, expand)
    except FlowError as exc:
        findings.unproven(str(exc))
        return
    if not pieces:
        findings.unproven("the command line has no command in it")
        return
    places = [policy]
    for piece in pieces:
        moved: list[PathPolicy] = []
        for place in places:
            target = _piece(piece.text, findings, place)
            if target is None:
                continue
            if piece.repeated:
                findings.unproven(
                    f"`{piece.text}` inside a `while`/`until` loop may change the directory "
                    "any number of times"
                )
                return
            if piece.lasting and all(p.cwd != target for p in [*places, *moved]):
                moved.append(place.moved(target))
        # `cd` may fail (or the branch may not run): the old directories stay possible.
        places.extend(moved)
        if len(places) > MAX_DIRECTORIES:
            findings.unproven(
                f"the command may run in more than {MAX_DIRECTORIES} directories; too many to check"
            )
            return


def _piece(text: str, findings: Findings, policy: PathPolicy) -> str | None:
    """Check one simple command; for a `cd`, the directory it leads to."""
    try:
        commands, tokens = lex_with_tokens(text)
    except LexError as exc:
        findings.unproven(str(exc))
        return None
    root = parse(text)
    if root.has_error or len(commands) != 1:
        findings.unproven(f"`{text[:60]}` does not read as one simple command")
        return None
    disagreement = _cross_check(root, tokens)
    if disagreement is not None:
        findings.unproven(disagreement)
        return None
    command = commands[0]
    for redirect in command.redirects:
        _redirect(redirect, findings, policy)
    if command.words[0].value == "cd" and not command.words[0].glob:
        return _cd(command.words, findings, policy)
    ArgCheck(findings, policy).simple(command.words)
    return None


_CD_FLAGS = frozenset({"-L", "-P", "-e", "-@"})


def _cd(words: list[SWord], findings: Findings, policy: PathPolicy) -> str | None:
    """`cd DIR`: where it leads, or None (refused, with the reason)."""
    args = words[1:]
    while args and args[0].value in _CD_FLAGS | {"--"}:
        if args.pop(0).value == "--":
            break
    if len(args) != 1:
        findings.unproven(
            "`cd` needs exactly one directory (without one it goes to the home directory)"
        )
        return None
    word = args[0]
    raw = word.value
    if word.glob and policy.glob_matches(word.pattern):
        findings.unproven(f"`cd {word.text}`: a glob as the directory; write the name")
        return None
    if raw.startswith("-"):
        findings.unproven(f"`cd {word.text}`: an option or the previous directory")
        return None
    if ".." in raw.split("/"):
        findings.unproven(
            f"`cd {word.text}`: `..` is taken from the path bash remembers, which may differ "
            "from where the directory really is; name the directory from the workspace"
        )
        return None
    if os.environ.get("CDPATH") and not raw.startswith(("/", "./")) and raw != ".":
        findings.unproven(
            f"`cd {word.text}`: CDPATH is set, so bash may look for `{raw}` elsewhere; "
            f"write `./{raw}`"
        )
        return None
    problem = policy.read_problem(raw, moving=True)
    if problem is not None:
        findings.unproven(f"`cd {word.text}`: {problem}")
        return None
    target = policy.resolve(raw)
    findings.add(frozenset(), f"`cd {word.text}` moves into {target}, inside the workspace")
    return target


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
        if target.value in ("1", "2") or (target.value == _SINK and r.fd is None):
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
        if kind in WORD_NODES:
            problem = _static_word(node, out)
            if problem is not None:
                return problem
            continue
        if kind == "test_command":
            # `[ EXPR ]`: bash reads `[`, every operator and operand, and `]` as words.
            if node_text(node).startswith("[["):
                return f"`{node_text(node)[:40]}`: `[[ ]]` is not in the allow-list's bash subset"
            out.append(("command", node.start_byte, node.start_byte))
            problem = _test_words(node, out)
            if problem is not None:
                return problem
            continue
        if kind == "command":
            out.append(("command", node.start_byte, node.start_byte))
        if kind in _CONTAINERS or kind == "command_name":
            stack.extend(reversed(node.children))
        elif kind == "file_redirect":
            out.append(("redirect", node.start_byte, node.start_byte))
            stack.extend(reversed([c for c in node.children if c.type in WORD_NODES]))
        elif kind == "comment" or (not node.is_named and kind in _SEPARATORS):
            continue
        else:
            return f"`{node_text(node)[:40]}` ({kind}) is not in the allow-list's small bash subset"
    return None


def _static_word(node: Node, out: list[Token]) -> str | None:
    """A word made of static parts only, added to `out`; else why not."""
    for part in descendants(node):
        if part.type not in STATIC_PARTS:
            return f"`{node_text(node)}` contains `{node_text(part)}`, which is not a static word"
    out.append(("word", node.start_byte, node.end_byte))
    return None


def _test_words(node: Node, out: list[Token]) -> str | None:
    for child in node.children:
        if child.type in WORD_NODES:
            problem = _static_word(child, out)
            if problem is not None:
                return problem
        elif child.type == "test_operator" or child.child_count == 0:
            out.append(("word", child.start_byte, child.end_byte))
        else:
            problem = _test_words(child, out)
            if problem is not None:
                return problem
    return None
