"""Control flow for `classified` (docs/security.md §7): loops, conditionals, groups, `[ ]`,
here-documents, `$(CMD)` and `cd`, reduced to the simple commands (*pieces*) they may run,
each then checked alone by the strict rules; nothing here decides that a command is harmless.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from plan_lsp.policy.shell.parser import descendants, node_text
from plan_lsp.policy.shell.paths import OBJECT_NAME_PLACEHOLDER

if TYPE_CHECKING:
    from tree_sitter import Node

# More pieces than this (loops over many files) are not checked one by one.
MAX_PIECES = 2000
_FLOW = frozenset(
    {
        "for_statement", "while_statement", "if_statement", "case_statement",
        "compound_statement", "subshell", "test_command", "heredoc_redirect",
        "herestring_redirect", "negated_command", "command_substitution",
    }
)  # fmt: skip
# What a substitution's output stands for while the outer command is checked: a full object
# name (`git rev-parse --verify`, `git merge-base`, `git rev-list -n 1`: one word of hex
# digits, or nothing), or printed text inside double quotes of `echo`.
_TEXT_PLACEHOLDER = "x"
# The nodes of a word, and the parts of one without expansions (shared with `strict.py`).
WORD_NODES = frozenset({"word", "string", "raw_string", "concatenation", "number"})
STATIC_PARTS = frozenset({"word", "string", "raw_string", "string_content", "number", '"'})
_STATIC = STATIC_PARTS | {"concatenation"}
_DELIMITER = re.compile(r"""(['"]?)([A-Za-z_][A-Za-z0-9_]*)\1\Z""")
_IFS_OR_GLOB = re.compile(r"[ \t\n*?\[]")
_LOOP_VARIABLE = re.compile(r"[a-z_][a-z0-9_]*\Z")
_PLAIN_VARIABLE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)|\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# Loops, conditionals and groups nest at most this deep.
MAX_DEPTH = 64
# Nodes whose children run in order, as they are (a `cd` in a pipeline or subshell does
# not last); loop bodies run any number of times.
_SEQUENCES = frozenset(
    {"program", "list", "compound_statement", "do_group", "negated_command", "if_statement"}
    | {"elif_clause", "else_clause", "pipeline", "subshell"}
)
_LOOPS = frozenset({"while_statement", "until_statement"})


class FlowError(Exception):
    """What is not followed, and why (the exception's text)."""


@dataclass(frozen=True, slots=True)
class Piece:
    """A simple command (with its redirections) that may run."""

    text: str
    # Its `cd` (if it is one) changes the directory of the commands after it: false inside
    # a pipeline or subshell.
    lasting: bool = True
    # Inside a loop whose body runs any number of times (`while`, `until`).
    repeated: bool = False


def needs_flow(root: Node) -> bool:
    """Whether the tree has a construct beyond simple commands, or a `cd`."""
    return any(
        node.type in _FLOW or (node.type == "command_name" and node_text(node) == "cd")
        for node in descendants(root)
    )


# Expands a glob as bash would, for `for` loops: (matches, or None when there are too many).
Expand = Callable[[str], "list[str] | None"]


class _Flatten:
    def __init__(self, src: str, expand: Expand) -> None:
        self.raw = src.encode("utf-8")
        self.expand = expand
        self.pieces: list[Piece] = []
        self.depth = 0

    def text(self, node: Node) -> str:
        return self.raw[node.start_byte : node.end_byte].decode("utf-8")

    def add(self, text: str, lasting: bool, repeated: bool) -> None:
        if len(self.pieces) >= MAX_PIECES:
            raise FlowError(f"the command would run more than {MAX_PIECES} commands to check")
        self.pieces.append(Piece(text, lasting, repeated))

    # -- walking ---------------------------------------------------------------------------
    def walk(self, node: Node, env: dict[str, str], lasting: bool, repeated: bool) -> None:
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise FlowError(f"the command is nested more than {MAX_DEPTH} levels deep")
            self.step(node, env, lasting, repeated)
        finally:
            self.depth -= 1

    def step(self, node: Node, env: dict[str, str], lasting: bool, repeated: bool) -> None:
        kind = node.type
        if kind in _SEQUENCES or kind in _LOOPS:
            if kind == "pipeline":
                lasting = lasting and sum(c.is_named for c in node.children) < 2
            lasting = lasting and kind != "subshell"
            repeated = repeated or kind in _LOOPS
            for child in node.children:
                self.child(child, env, lasting, repeated)
        elif kind == "command":
            self.add(self.command(node, env, []), lasting, repeated)
        elif kind == "test_command":
            self.add(self.test_command(node, env), lasting, repeated)
        elif kind == "redirected_statement":
            self.redirected(node, env, lasting, repeated)
        elif kind == "for_statement":
            self.for_loop(node, env, lasting, repeated)
        elif kind == "case_statement":
            self.case(node, env, lasting, repeated)
        else:
            raise FlowError(
                f"`{self.text(node)[:40]}` ({kind}) is not in the allow-list's small bash subset"
            )

    def child(self, node: Node, env: dict[str, str], lasting: bool, repeated: bool) -> None:
        if node.type == "comment":
            self.comment(node)
            return
        if not node.is_named:
            if node.type == "&":
                raise FlowError("`&` runs a command in the background (write:process)")
            return
        self.walk(node, env, lasting, repeated)

    def comment(self, node: Node) -> None:
        """A comment is skipped, so it must be one for bash too: `#` at the start of a word,
        running to the end of the line."""
        before = self.raw[node.start_byte - 1 : node.start_byte] if node.start_byte else b""
        after = self.raw[node.end_byte : node.end_byte + 1]
        if (before and before not in b" \t\n;&|()") or after not in (b"", b"\n"):
            raise FlowError(
                f"`{self.text(node)[:40]}`: bash and tree-sitter-bash may disagree about this "
                "comment, so it is refused"
            )

    # -- simple commands -------------------------------------------------------------------
    def command(self, node: Node, env: dict[str, str], extra: list[str]) -> str:
        """The command's text with loop variables replaced, here-strings left out (they only
        feed standard input), and `extra` redirections appended."""
        parts: list[str] = []
        for child in node.children:
            if child.type == "herestring_redirect":
                self.herestring(child)
                continue
            if child.type == "variable_assignment":
                raise FlowError(f"`{self.text(child)}` assigns a variable (modify:environment)")
            data = bool(parts) and parts[0] == "echo"
            if parts[:1] == ["test"]:
                words = [c for c in node.children[1:] if c.is_named]
                data = child.type == "string" and (
                    len(words) == 1
                    or (
                        len(words) == 2
                        and self.text(words[0]) in ("-n", "-z")
                        and child == words[1]
                    )
                )
            parts.append(self.substituted(child, env, data))
        return " ".join([*parts, *extra])

    def substitution(self, node: Node, env: dict[str, str], quoted: bool, echo: bool) -> str:
        """`$(CMD)`: CMD is checked as a command of its own; its unseen output may stand only
        as a git object name where git reads a revision, or as quoted text for `echo` or an
        emptiness `test`. Elsewhere it could be an option (`--files0-from=F`), a glob, or a
        path through a tracked link."""
        text = self.text(node)
        if not text.startswith("$("):
            raise FlowError(f"`{text[:40]}`: use `$(…)` rather than backquotes")
        inner = [c for c in node.children if c.is_named and c.type != "comment"]
        for child in inner:
            self.walk(child, env, False, False)
        if len(inner) == 1 and inner[0].type == "command" and self.prints_object_name(inner[0]):
            return OBJECT_NAME_PLACEHOLDER
        if quoted and echo:
            # Printed by `echo`, tested for emptiness, or a `case` subject: data only.
            return _TEXT_PLACEHOLDER
        raise FlowError(
            f"`{text[:40]}`: the output of a command substitution is words nobody has seen; "
            "it is accepted only where it cannot matter (a git object name from "
            "`git rev-parse --verify REV`, `git merge-base A B` or `git rev-list -n 1 REV`, "
            "or text inside double quotes given to `echo`)"
        )

    def prints_object_name(self, command: Node) -> bool:
        """Whether `command` prints one full or abbreviated object name, or nothing."""
        from plan_lsp.policy.shell.lexer import LexError, lex

        try:
            commands = lex(self.text(command))
        except LexError:
            return False
        if len(commands) != 1 or commands[0].redirects:
            return False
        words = [w.value for w in commands[0].words]
        if any(w.glob for w in commands[0].words) or len(words) < 3 or words[0] != "git":
            return False
        sub, args = words[1], words[2:]
        options = [a for a in args if a.startswith("-")]
        operands = [a for a in args if not a.startswith("-")]
        if sub == "rev-parse":
            allowed = {"--verify", "-q", "--quiet", "--short"}
            return (
                "--verify" in options
                and all(o in allowed or re.fullmatch(r"--short=[0-9]+", o) for o in options)
                and len(operands) == 1
            )
        if sub == "merge-base":
            return not options and len(operands) >= 2
        if sub == "rev-list":
            one = args[:2] == ["-n", "1"] or args[:1] in (["-1"], ["--max-count=1"])
            rest = args[2:] if args[:2] == ["-n", "1"] else args[1:]
            return (
                one
                and all(
                    not a.startswith("-") or a in ("--first-parent", "--no-merges") for a in rest
                )
                and any(not a.startswith("-") for a in rest)
            )
        return False

    def substituted(self, node: Node, env: dict[str, str], echo: bool = False) -> str:
        """The source of `node` with `$VAR`/`${VAR}` of loop variables replaced, and command
        substitutions by what their output stands for (`substitution`); `echo`: `node` is an
        argument of `echo`."""
        out: list[str] = []
        pos = node.start_byte
        if node.type in ("simple_expansion", "expansion", "command_substitution"):
            found = [(node, False)]
        else:
            found = self.expansions(node, node.type == "string")
        for exp, quoted in found:
            if exp.type == "command_substitution":
                replacement = self.substitution(exp, env, quoted, echo)
            else:
                name = self.plain_variable(exp)
                if name is None or name not in env:
                    continue  # left as written: the strict rules refuse it with their reason
                value = env[name]
                if quoted:
                    replacement = re.sub(r'([$`"\\])', r"\\\1", value)
                elif _IFS_OR_GLOB.search(value) or value == "":
                    raise FlowError(
                        f"`{self.text(exp)}` is unquoted and its value `{value}` would be split "
                        f'or expanded again by bash; write `"{self.text(exp)}"`'
                    )
                else:
                    replacement = "'" + value.replace("'", "'\\''") + "'"
            out.append(self.raw[pos : exp.start_byte].decode("utf-8"))
            out.append(replacement)
            pos = exp.end_byte
        out.append(self.raw[pos : node.end_byte].decode("utf-8"))
        return "".join(out)

    def expansions(self, node: Node, quoted: bool) -> list[tuple[Node, bool]]:
        found: list[tuple[Node, bool]] = []
        for child in node.children:
            if child.type in ("simple_expansion", "expansion", "command_substitution"):
                found.append((child, quoted))
            else:
                found.extend(self.expansions(child, quoted or child.type == "string"))
        return found

    def plain_variable(self, exp: Node) -> str | None:
        """`$NAME` or `${NAME}` (nothing else inside), or None."""
        m = _PLAIN_VARIABLE.fullmatch(self.text(exp))
        return None if m is None else m.group(1) or m.group(2)

    def test_command(self, node: Node, env: dict[str, str]) -> str:
        text = self.text(node)
        if not (text.startswith("[") and not text.startswith("[[") and text.endswith("]")):
            raise FlowError(
                f"`{text[:40]}`: `[[ ]]` evaluates arithmetic in array subscripts; use `[ ]` or "
                "`test`"
            )
        named = [c for c in node.children if c.is_named]
        data = len(named) == 1 and self.data_test(named[0])
        inner = self.substituted(node, env, data)
        # `[ EXPR ]` is `test EXPR`: the same words without the brackets.
        return "test " + inner[1:-1].strip()

    def data_test(self, expr: Node) -> bool:
        """`[ "$(CMD)" ]`, `[ -n "$(CMD)" ]`, `[ -z "$(CMD)" ]`: the output is one word that
        `test` only compares with the empty string, never reads as an operator."""
        if expr.type == "string":
            return True
        if expr.type != "unary_expression":
            return False
        parts = [c for c in expr.children if c.is_named]
        return (
            len(parts) == 2
            and parts[0].type == "test_operator"
            and self.text(parts[0]) in ("-n", "-z")
            and parts[1].type == "string"
        )

    def herestring(self, node: Node) -> None:
        """A here-string only feeds standard input, but it must be a static word."""
        for word in node.named_children:
            if any(part.type not in _STATIC for part in [word, *descendants(word)]):
                raise FlowError(f"`{self.text(word)}` in a here-string is not a static word")

    # -- redirections and here-documents --------------------------------------------------------
    def redirected(self, node: Node, env: dict[str, str], lasting: bool, repeated: bool) -> None:
        bodies = [c for c in node.children if c.is_named and not c.type.endswith("_redirect")]
        if len(bodies) != 1:
            raise FlowError(f"`{self.text(node)[:40]}`: a redirection this check cannot follow")
        body = bodies[0]
        redirects: list[str] = []
        after: list[Node] = []
        for child in node.children:
            if child == body or not child.is_named:
                continue
            if child.type == "file_redirect":
                redirects.append(self.substituted(child, env))
            elif child.type == "heredoc_redirect":
                inner_redirects, rest = self.heredoc(child)
                redirects.extend(self.substituted(r, env) for r in inner_redirects)
                after.extend(rest)
            elif child.type == "herestring_redirect":
                self.herestring(child)
            else:
                raise FlowError(f"`{self.text(child)[:40]}` ({child.type}) is not allowed here")
        pipe_after = any(n.type == "pipeline" for n in after)
        if body.type == "command":
            self.add(self.command(body, env, redirects), lasting and not pipe_after, repeated)
        elif body.type == "test_command":
            text = self.test_command(body, env)
            self.add(" ".join([text, *redirects]), lasting and not pipe_after, repeated)
        else:
            self.walk(body, env, lasting and not pipe_after, repeated)
            if redirects:
                self.add("true " + " ".join(redirects), lasting, repeated)
        for tail in after:
            # A pipeline or list after the here-document's start (`cat <<EOF | grep x`).
            for child in tail.children:
                self.child(child, env, lasting and tail.type != "pipeline", repeated)

    def heredoc(self, node: Node) -> tuple[list[Node], list[Node]]:
        """Check a here-document; returns its redirections and the commands after its start."""
        op = start = body = end = None
        redirects: list[Node] = []
        rest: list[Node] = []
        for child in node.children:
            kind = child.type
            if kind in ("<<", "<<-"):
                op = kind
            elif kind == "heredoc_start":
                start = child
            elif kind == "heredoc_body":
                body = child
            elif kind == "heredoc_end":
                end = child
            elif kind == "file_redirect":
                redirects.append(child)
            elif kind in ("pipeline", "list"):
                rest.append(child)
            elif child.is_named:
                raise FlowError(
                    f"`{self.text(child)[:40]}` ({kind}) after a here-document is not allowed"
                )
        if op is None or start is None or end is None:
            raise FlowError("a here-document this check cannot read")
        m = _DELIMITER.match(self.text(start))
        if m is None:
            raise FlowError(
                f"`{self.text(start)}`: a here-document delimiter must be a plain name, "
                "quoted as a whole or not at all"
            )
        quoted, delimiter = bool(m.group(1)), m.group(2)
        # Where bash ends the body: the first line after the command line's end that is the
        # delimiter (tabs stripped for `<<-`).
        line_end = self.raw.find(b"\n", start.end_byte)
        if line_end < 0:
            raise FlowError("a here-document without a body")
        cut = line_end + 1
        first = len(self.raw) - len(self.raw[cut:].lstrip(b"\t")) if op == "<<-" else cut
        if body is not None and not cut <= body.start_byte <= first:
            raise FlowError(
                "the here-document's body does not start on the next line (two here-documents "
                "or a continued line), which this check does not follow"
            )
        pos = cut
        while True:
            nl = self.raw.find(b"\n", pos)
            line = self.raw[pos : nl if nl >= 0 else len(self.raw)]
            if op == "<<-":
                line = line.lstrip(b"\t")
            if line == delimiter.encode():
                break
            if nl < 0:
                raise FlowError(f"the here-document is never closed by `{delimiter}`")
            pos = nl + 1
        # bash: the body ends where the delimiter line starts; tree-sitter must agree.
        ts_end = end.start_byte
        if op == "<<-":
            ts_end = len(self.raw[:ts_end].rstrip(b"\t"))
        if ts_end != pos:
            raise FlowError(
                f"bash and tree-sitter-bash disagree about where the here-document `{delimiter}` "
                "ends, so it is refused"
            )
        if not quoted:
            text = self.raw[cut:pos].decode("utf-8")
            bad = re.search(r"[$`\\]", text)
            if bad is not None:
                what = {"$": "`$`", "`": "a backquote", "\\": "a backslash"}[bad.group(0)]
                raise FlowError(
                    f"the here-document `{delimiter}` has {what} in its body, which bash "
                    f"expands because the delimiter is unquoted; write <<'{delimiter}'"
                )
        return redirects, rest

    # -- loops and case -------------------------------------------------------------------------
    def for_loop(self, node: Node, env: dict[str, str], lasting: bool, repeated: bool) -> None:
        var: str | None = None
        values: list[str] = []
        saw_in = False
        body: Node | None = None
        for child in node.children:
            kind = child.type
            if kind == "select":
                raise FlowError("`select` waits for an answer on standard input")
            if kind == "variable_name":
                var = self.text(child)
                problem = _loop_variable_problem(var)
                if problem is not None:
                    raise FlowError(problem)
            elif kind == "in":
                saw_in = True
            elif kind == "do_group":
                body = child
            elif kind in WORD_NODES and saw_in:
                values.extend(self.loop_values(child, env))
            elif child.is_named and kind != "comment":
                raise FlowError(f"`{self.text(child)[:40]}` ({kind}) in a `for` list")
        if var is None or body is None or not saw_in:
            raise FlowError("a `for` loop without `in WORDS` iterates over the arguments")
        for value in values:
            self.walk(body, {**env, var: value}, lasting, repeated)

    def loop_values(self, word: Node, env: dict[str, str]) -> list[str]:
        """The values bash gives the loop variable for one word of the list."""
        for part in [word, *descendants(word)]:
            if part.type in ("simple_expansion", "expansion"):
                known = self.plain_variable(part) in env
            else:
                known = part.type in _STATIC or not part.is_named
            if not known:
                raise FlowError(f"`{self.text(word)}` in a `for` list is only known at run time")
        from plan_lsp.policy.shell.lexer import LexError, lex

        try:
            commands = lex("true " + self.substituted(word, env))
        except LexError as exc:
            raise FlowError(f"`{self.text(word)}` in a `for` list: {exc}") from None
        values: list[str] = []
        for sword in commands[0].words[1:]:
            if sword.glob:
                matches = self.expand(sword.pattern)
                if matches is None:
                    raise FlowError(f"`{sword.text}` matches too many files to check")
                values.extend(matches or [sword.value])
            else:
                values.append(sword.value)
        return values

    def case(self, node: Node, env: dict[str, str], lasting: bool, repeated: bool) -> None:
        subject_seen = False
        for child in node.children:
            kind = child.type
            if kind == "case_item":
                self.case_item(child, env, lasting, repeated)
            elif child.is_named and kind != "comment" and not subject_seen:
                subject_seen = True
                self.case_subject(child, env)
            elif child.is_named and kind != "comment":
                raise FlowError(f"`{self.text(child)[:40]}` ({kind}) in a `case` statement")

    def case_subject(self, node: Node, env: dict[str, str]) -> None:
        """The subject only selects a branch, and every branch is checked: a `$(CMD)` in it
        is fine once CMD is (`case "$(uname -s)" in …`); other expansions are not."""
        for part in [node, *descendants(node)]:
            if part.type == "command_substitution":
                self.substitution(part, env, True, True)
            elif part.type in ("simple_expansion", "expansion"):
                if self.plain_variable(part) not in env:
                    raise FlowError(f"`{self.text(node)}` in a `case` subject is not static")
            elif part.type not in _STATIC and part.is_named:
                if not _inside_substitution(part, node):
                    raise FlowError(f"`{self.text(node)}` in a `case` subject is not static")

    def case_item(self, node: Node, env: dict[str, str], lasting: bool, repeated: bool) -> None:
        in_body = False
        for child in node.children:
            if in_body:
                self.child(child, env, lasting, repeated)
            elif child.type == ")":
                in_body = True
            elif child.is_named:
                self.static_pattern(child)

    def static_pattern(self, node: Node) -> None:
        for part in [node, *descendants(node)]:
            if part.type in ("simple_expansion", "expansion", "command_substitution",
                             "arithmetic_expansion", "process_substitution"):  # fmt: skip
                raise FlowError(f"`{self.text(node)}`: a `case` pattern is expanded at run time")


def _loop_variable_problem(name: str) -> str | None:
    """A loop variable is assigned like any variable: it must not be one bash or the
    programs it runs read (`PATH`, `IFS`, `BASH_ENV`, `GIT_DIR`, a proxy, ...)."""
    if not _LOOP_VARIABLE.match(name):
        return (
            f"`for {name}` assigns `{name}`; loop variables must be lower-case names "
            "(upper-case names include the variables bash and programs read, like `PATH`)"
        )
    if name in os.environ:
        return f"`for {name}` assigns `{name}`, a variable in the environment programs read"
    return None


def _inside_substitution(part: Node, top: Node) -> bool:
    """Whether `part` lies inside a command substitution within `top` (or `top` itself)."""
    parent = part.parent
    while parent is not None:
        if parent.type == "command_substitution":
            return True
        if parent == top:
            return False
        parent = parent.parent
    return False


def flatten(src: str, root: Node, expand: Expand) -> list[Piece]:
    """The simple commands `src` may run, or FlowError naming what is not followed."""
    flat = _Flatten(src, expand)
    flat.walk(root, {}, True, False)
    return flat.pieces
