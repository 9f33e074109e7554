"""The `sandboxed` rule set: walk a bash syntax tree and record what every command would do;
what it identifies (a write redirection, `rm`, `git commit`, a network tool) is refused, what
it does not understand is noted and left to the sandbox.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from plan_lsp.policy.shell.argv import classify_argv
from plan_lsp.policy.shell.model import Findings
from plan_lsp.policy.shell.parser import node_text, parse, snippet_of_error
from plan_lsp.policy.shell.words import Word, resolve

if TYPE_CHECKING:
    from tree_sitter import Node

MAX_DEPTH = 24
# Statements nested inside statements (subshells, groups, loops): past this, refused.
MAX_NESTING = 64

_ENV = frozenset({"modify:environment"})
_WRITE_FS = frozenset({"write:filesystem"})
_WRITE_PROC = frozenset({"write:process"})

# Nodes whose named children are themselves statements.
_CONTAINERS = frozenset(
    {
        "program", "list", "pipeline", "subshell", "compound_statement", "do_group",
        "negated_command", "if_statement", "elif_clause", "else_clause", "while_statement",
    }
)  # fmt: skip
_HARMLESS_TOKENS = frozenset(
    {
        ";", ";;", "&&", "||", "|", "|&", "!", "(", ")", "{", "}", "\n", "if", "then", "elif",
        "else", "fi", "while", "until", "do", "done", "for", "in", "case", "esac", "function",
    }
)  # fmt: skip
_WORD_TYPES = frozenset(
    {
        "word", "string", "raw_string", "ansi_c_string", "translated_string", "concatenation",
        "number", "simple_expansion", "expansion", "command_substitution", "process_substitution",
        "brace_expression", "extglob_pattern", "arithmetic_expansion",
    }
)  # fmt: skip
_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
_HARMLESS_SINK = "/dev/null"
_NETWORK_DEVICES = ("/dev/tcp/", "/dev/udp/")
_ASCII_DIGITS = re.compile(r"[0-9]+\Z")
_NETWORK = frozenset({"read:network", "write:network"})
# Loop and `read` variables: short lower-case names cannot collide with the environment
# variables that steer programs (PATH, LD_PRELOAD, GIT_DIR, http_proxy, ...).
_LOCAL_NAME = re.compile(r"[a-z][a-z0-9]{0,15}\Z")
_TEST_ARITHMETIC = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-v", "-R"})
_COMMAND_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+\[-]*\Z")


class Walker:
    """Accumulates findings for one command line (and the lines nested inside it)."""

    def __init__(self, findings: Findings, depth: int = 0) -> None:
        self.f = findings
        self.depth = depth
        self.level = 0

    # WordSink -----------------------------------------------------------------------
    def nested(self, node: Node) -> None:
        if self.depth >= MAX_DEPTH:
            self.f.fatal("commands are nested too deeply to check")
            return
        inner = Walker(self.f, self.depth + 1)
        for child in node.children:
            if child.is_named:
                inner.statement(child)
            elif child.type not in ("$(", ")", "`", "<(", ">("):
                self.f.unproven(
                    f"`{node_text(node)}` is a substitution this checker does not understand"
                )

    def refuse(self, reason: str) -> None:
        self.f.unproven(reason)

    def assigns(self, reason: str) -> None:
        self.f.add(_ENV, f"{reason} (modify:environment)")

    # Statements ---------------------------------------------------------------------
    def statement(self, node: Node) -> None:
        if self.level >= MAX_NESTING:
            if self.level == MAX_NESTING:
                self.f.fatal(f"statements are nested more than {MAX_NESTING} levels deep")
                self.level += 1
            return
        self.level += 1
        try:
            self.dispatch(node)
        finally:
            self.level -= 1

    def dispatch(self, node: Node) -> None:
        kind = node.type
        if kind == "command":
            self.command(node)
        elif kind in _CONTAINERS:
            self.children(node)
        elif kind == "redirected_statement":
            self.redirected(node)
        elif kind == "for_statement":
            self.for_loop(node)
        elif kind == "case_statement":
            self.case(node)
        elif kind == "function_definition":
            body = node.child_by_field_name("body")
            if body is None:
                self.f.unproven(f"function definition `{node_text(node)[:40]}` has no body")
            else:
                self.statement(body)
        elif kind == "test_command":
            self.test(node)
        elif kind == "comment":
            pass
        elif kind in ("variable_assignment", "variable_assignments"):
            self.f.add(_ENV, f"`{node_text(node)}` sets a shell variable (modify:environment)")
            self.words_inside(node)
        elif kind in ("declaration_command", "unset_command"):
            self.f.add(
                _ENV, f"`{node_text(node)[:60]}` changes shell variables (modify:environment)"
            )
            self.words_inside(node)
        elif kind in _REDIRECTS:
            self.redirect(node)
        elif kind == "heredoc_body":
            self.heredoc_body(node)
        else:
            self.f.unproven(
                f"`{node_text(node)[:60]}` is a shell construct this checker does not understand"
            )

    def children(self, node: Node) -> None:
        for child in node.children:
            if child.is_named:
                self.statement(child)
            else:
                self.children_token(child)

    def words_inside(self, node: Node) -> None:
        for child in node.named_children:
            if child.type in _WORD_TYPES:
                resolve(child, self)
            elif child.type == "variable_assignment":
                self.words_inside(child)

    def redirected(self, node: Node) -> None:
        for child in node.children:
            if child.type in _REDIRECTS:
                self.redirect(child)
            elif child.is_named:
                self.statement(child)
            else:
                self.children_token(child)

    def children_token(self, token: Node) -> None:
        if token.type == "&":
            self.f.add(
                _WRITE_PROC, "`&` leaves a command running in the background (write:process)"
            )
        elif token.type not in _HARMLESS_TOKENS:
            self.f.unproven(f"`{token.type}` is a shell construct this checker does not understand")

    def part(self, node: Node) -> None:
        """A part of a loop or `case`: a word, a statement or a token."""
        if node.type in _WORD_TYPES:
            resolve(node, self)
        elif node.is_named:
            self.statement(node)
        else:
            self.children_token(node)

    def for_loop(self, node: Node) -> None:
        for child in node.children:
            if child.type == "variable_name":
                self.local_name(node_text(child), "a `for` loop")
            else:
                self.part(child)

    def local_name(self, name: str, where: str) -> None:
        if not _LOCAL_NAME.match(name):
            self.f.add(
                _ENV,
                f"{where} assigns `{name}`, a name that could steer other programs "
                "(use a short lower-case name) (modify:environment)",
            )

    def case(self, node: Node) -> None:
        for child in node.children:
            for part in child.children if child.type == "case_item" else [child]:
                self.part(part)

    def test(self, node: Node) -> None:
        double = node_text(node).startswith("[[")
        stack = list(node.children)
        while stack:
            child = stack.pop()
            kind = child.type
            if kind in _WORD_TYPES:
                resolve(child, self)
            elif kind == "test_operator":
                if double and node_text(child) in _TEST_ARITHMETIC:
                    self.f.unproven(
                        f"`{node_text(child)}` inside `[[ ]]` evaluates operands as arithmetic, "
                        "which can run commands hidden in variable values (use `[ ]`)"
                    )
            elif kind in ("binary_expression", "unary_expression", "parenthesized_expression"):
                stack.extend(child.children)
            elif kind == "regex" or not child.is_named:
                continue
            else:
                self.f.unproven(f"`{node_text(child)[:60]}` inside a test is not understood")

    def heredoc_body(self, node: Node) -> None:
        for child in node.named_children:
            if child.type == "heredoc_content":
                continue
            resolve(child, self)

    def redirect(self, node: Node) -> None:
        kind = node.type
        if kind == "heredoc_redirect":
            for child in node.named_children:
                if child.type == "heredoc_body":
                    self.heredoc_body(child)
                elif child.type in ("heredoc_start", "heredoc_end", "file_descriptor"):
                    continue
                elif child.type in _REDIRECTS:
                    self.redirect(child)
                elif child.type in _WORD_TYPES:
                    resolve(child, self)
                else:
                    # `cat <<EOF | cmd` hangs the rest of the pipeline off the heredoc.
                    self.statement(child)
            return
        if kind == "herestring_redirect":
            for child in node.named_children:
                if child.type != "file_descriptor":
                    resolve(child, self)
            return
        op = ""
        dest: Word | None = None
        for child in node.children:
            if not child.is_named:
                op = child.type
            elif child.type == "file_descriptor":
                continue
            elif dest is None:
                dest = resolve(child, self)
            else:
                # tree-sitter hangs later words on the redirection; bash passes them to the
                # command as arguments.
                resolve(child, self)
        text = node_text(node)
        if dest is None:
            self.f.unproven(f"redirection `{text}` is not understood")
            return
        network = dest.value is not None and dest.value.startswith(_NETWORK_DEVICES)
        if op in ("<", "<<<"):
            if network:
                self.f.add(_NETWORK, f"`{text}` opens a network connection (read:network)")
            return
        if op in (">&", "<&", ">&-", "<&-") and dest.value is not None:
            if _ASCII_DIGITS.match(dest.value) or dest.value == "-":
                return  # a descriptor copied or closed
        if op not in _WRITE_REDIRECTS and op not in (">&", ">&-", "<&-"):
            self.f.unproven(f"redirection `{text}` is not understood")
        elif network:
            self.f.add(
                _NETWORK, f"`{text}` opens a network connection (read:network, write:network)"
            )
        elif dest.value != _HARMLESS_SINK:
            self.f.add(
                _WRITE_FS,
                f"`{text}` writes to a file; only `/dev/null` is harmless (write:filesystem)",
            )

    # Simple commands ----------------------------------------------------------------
    def command(self, node: Node) -> None:
        name: Word | None = None
        args: list[Word] = []
        for child in node.children:
            kind = child.type
            if kind == "variable_assignment":
                self.f.add(
                    _ENV,
                    f"`{node_text(child)}` changes the environment of the command it prefixes "
                    "(modify:environment)",
                )
                self.words_inside(child)
            elif kind == "command_name":
                inner = child.named_children
                if len(inner) != 1:
                    self.f.unproven(f"command name `{node_text(child)}` is not understood")
                    return
                name = resolve(inner[0], self)
            elif kind in _REDIRECTS:
                self.redirect(child)
            elif kind in _WORD_TYPES:
                args.append(resolve(child, self))
            elif kind in ("subscript", "comment"):
                self.f.unproven(f"`{node_text(child)}` is not understood here")
            else:
                self.f.unproven(f"`{node_text(child)[:60]}` inside a command is not understood")
        if name is None:
            self.f.unproven(f"`{node_text(node)[:60]}` has no command name")
            return
        self.simple(name, args)

    def simple(self, name: Word, args: list[Word]) -> None:
        cmd = name.value
        if cmd is None:
            self.f.unproven(
                f"the command name `{name.text}` is only known at run time, so it cannot be checked"
            )
            return
        if not cmd.isascii() or not cmd.isprintable():
            self.f.unproven(
                f"the command name `{name.text}` contains non-ASCII or control characters"
            )
            return
        if "/" in cmd:
            self.f.unproven(
                f"`{cmd}` names a program by path; only known commands found on PATH are checked"
            )
            return
        if not _COMMAND_NAME.match(cmd):
            self.f.unproven(f"`{cmd}` is not a command name this checker knows")
            return
        classify_argv(cmd, args, self)

    def shell_string(self, source: str) -> None:
        """Classify a string that another program hands to a shell (`watch 'cmd'`)."""
        if self.depth >= MAX_DEPTH:
            self.f.fatal("commands are nested too deeply to check")
            return
        walk_source(source, self.f, self.depth + 1)

    def local_names(self, names: list[Word], cmd: str) -> None:
        for word in names:
            if word.value is None:
                self.f.unproven(f"`{cmd}` assigns a variable whose name `{word.text}` is not fixed")
            else:
                self.local_name(word.value, f"`{cmd}`")


def walk_source(source: str, findings: Findings, depth: int) -> None:
    root = parse(source)
    if root.has_error:
        # Still walked: what parsed can show an intent to write; the rest runs sandboxed.
        findings.unproven(f"the command does not parse as complete bash{snippet_of_error(root)}")
    Walker(findings, depth).statement(root)
