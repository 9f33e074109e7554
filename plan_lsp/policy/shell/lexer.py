"""The `classified` subset of bash, read the way bash reads it.

Simple commands joined by `;`, `&&`, `||`, `|`, `|&`, newlines, static words and a few
redirections; anything else stops with a reason. `strict.py` cross-checks with tree-sitter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_BLANK = " \t"
# Longest first: what ends a simple command.
_SEPARATORS = ("&&", "||", "|&", "|", ";")
_BLANKS = re.compile(r"[ \t]+")
_META = frozenset(" \t\n;&|()<>")
_STOP_IN_WORD = frozenset(" \t\n;&|()<>\\'\"$`*?[{}~")
_PLAIN_RUN = re.compile(r"[^ \t\n;&|()<>\\'\"$`*?\[{}~]+")
_DQ_ESCAPABLE = frozenset('$`"\\')
_RESERVED = frozenset(
    "if then else elif fi do done case esac while until for in select function time "
    "coproc { } ! [[ ]]".split()
)
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_FD = re.compile(r"[0-9]+\Z")
_NAMED_FD = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}\Z")
# `{` ... `,` or `..` ... `}` among the unquoted characters: bash may expand it.
_BRACES = re.compile(r"\{.*(,|\.\.).*\}", re.S)


class LexError(Exception):
    """What is outside the subset, and why (the exception's text)."""


@dataclass(slots=True)
class SWord:
    value: str
    start: int
    end: int
    text: str
    # Unquoted `*` or `?`: bash replaces the word with matching file names.
    glob: bool = False
    # The word as an fnmatch pattern (quoted characters escaped); only set for globs.
    pattern: str = ""


@dataclass(slots=True)
class Redirect:
    op: str  # ">", ">>", "&>", "&>>", ">&", "<"
    fd: int | None
    target: SWord
    text: str


@dataclass(slots=True)
class SimpleCommand:
    words: list[SWord] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    start: int = -1


def _escape_glob(text: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


Token = tuple[str, int, int]


class _Lexer:
    def __init__(self, src: str) -> None:
        self.s = src
        self.n = len(src)
        self.i = 0
        self.commands: list[SimpleCommand] = []
        self.cur = SimpleCommand()
        # Where each command, word and redirection starts (and ends), in source order: what
        # the tree-sitter reading must agree with.
        self.tokens: list[Token] = []

    def snippet(self, start: int, end: int | None = None) -> str:
        stop = self.n if end is None else end
        text = self.s[start:stop]
        return text if len(text) <= 40 else text[:40] + "…"

    # -- commands ------------------------------------------------------------------------
    def run(self) -> list[SimpleCommand]:
        s, n = self.s, self.n
        while self.i < n:
            c = s[self.i]
            if c in _BLANK:
                self.i = _BLANKS.match(s, self.i).end()  # type: ignore[union-attr]
            elif c == "\\" and s.startswith("\n", self.i + 1):
                self.i += 2
            elif c == "\n":
                self.finish(allow_empty=True)
                self.i += 1
            elif s.startswith((";;", ";&"), self.i):
                raise LexError(f"`{s[self.i : self.i + 2]}` only belongs in a `case` statement")
            elif c in ";|" or s.startswith("&&", self.i):
                op = next(op for op in _SEPARATORS if s.startswith(op, self.i))
                self.finish(allow_empty=False, token=op)
                self.i += len(op)
            elif c == "#":
                end = s.find("\n", self.i)
                self.i = n if end < 0 else end
            elif c == "&" and not s.startswith("&>", self.i):
                raise LexError("`&` runs a command in the background (write:process)")
            elif c in "()":
                raise LexError(
                    f"`{c}` (a subshell, group or substitution) is not in the allow-list's "
                    "small bash subset"
                )
            elif c in "<>&":
                self.redirect(None, self.i)
            else:
                self.word_or_fd()
        self.finish(allow_empty=True)
        return self.commands

    def finish(self, allow_empty: bool, token: str = "") -> None:
        cur = self.cur
        if not cur.words and not cur.redirects:
            if not allow_empty:
                raise LexError(f"`{token}` has no command before it")
            return
        if not cur.words:
            raise LexError("a redirection without a command is not allowed")
        first = cur.words[0]
        if first.text in _RESERVED:
            raise LexError(
                f"`{first.text}` starts a compound command (loops, conditionals, functions "
                "and the like are not in the allow-list)"
            )
        if _ASSIGNMENT.match(first.text):
            raise LexError(f"`{first.text}` assigns a variable (modify:environment)")
        self.commands.append(cur)
        self.cur = SimpleCommand()

    def word_or_fd(self) -> None:
        start = self.i
        word = self.word()
        nxt = self.s[self.i] if self.i < self.n else ""
        if nxt in ("<", ">") and word.end == self.i:
            if _FD.match(word.text):
                self.redirect(int(word.text) if len(word.text) < 4 else 999, start)
                return
            if _NAMED_FD.match(word.text):
                raise LexError(f"`{word.text}{nxt}` allocates a file descriptor into a variable")
        self.begin(start)
        self.tokens.append(("word", word.start, word.end))
        self.cur.words.append(word)

    def begin(self, start: int) -> None:
        """A word or redirection at `start` belongs to the current command (which may start)."""
        if self.cur.start < 0:
            self.cur.start = start
            self.tokens.append(("command", start, start))

    # -- redirections ----------------------------------------------------------------------
    def redirect(self, fd: int | None, start: int) -> None:
        s = self.s
        i = self.i
        for op in ("&>>", "&>", ">>", ">&", ">|", "<<", "<&", "<>", ">", "<"):
            if s.startswith(op, i):
                break
        if op in ("<<", "<&", "<>", ">|") or s.startswith(("<(", ">("), i):
            what = {
                "<<": "here-documents and here-strings",
                "<&": "duplicating input descriptors",
                "<>": "opening a file for reading and writing",
                ">|": "overwriting a file despite noclobber",
            }.get(op, "process substitution")
            raise LexError(f"`{self.snippet(start, i + 3)}`: {what} is not allowed")
        self.i = i + len(op)
        while self.i < self.n and s[self.i] in _BLANK:
            self.i += 1
        if self.i >= self.n or s[self.i] in _META:
            raise LexError(f"redirection `{self.snippet(start, self.i)}` has no target")
        self.begin(start)
        self.tokens.append(("redirect", start, start))
        target = self.word()
        self.tokens.append(("word", target.start, target.end))
        self.cur.redirects.append(Redirect(op, fd, target, s[start : target.end]))

    # -- words -----------------------------------------------------------------------------
    def word(self) -> SWord:
        s, n = self.s, self.n
        start = self.i
        plain = _PLAIN_RUN.match(s, start)
        if plain is not None:
            end = plain.end()
            if end == n or s[end] in _META:
                # The common case: nothing quoted, escaped, globbed or braced.
                self.i = end
                text = s[start:end]
                return SWord(text, start, end, text)
        value: list[str] = []
        pattern: list[str] = []
        # The word with every quoted or escaped character replaced by `_`: brace expansion
        # only sees unquoted `{`, `,`, `..` and `}`.
        skeleton: list[str] = []

        def add(text: str, quoted: bool) -> None:
            value.append(text)
            pattern.append(_escape_glob(text) if quoted else "[[]" if text == "[" else text)
            skeleton.append("_" if quoted else text)

        glob = False
        i = start
        while i < n:
            c = s[i]
            if c not in _STOP_IN_WORD:
                j = _PLAIN_RUN.match(s, i).end()  # type: ignore[union-attr]
                add(s[i:j], quoted=False)
                i = j
            elif c in _META:
                break
            elif c == "\\":
                if i + 1 >= n:
                    raise LexError("the command ends in a lone backslash")
                if s[i + 1] != "\n":
                    add(s[i + 1], quoted=True)
                i += 2
            elif c == "'":
                end = s.find("'", i + 1)
                if end < 0:
                    raise LexError(f"the quote at `{self.snippet(i)}` is never closed")
                add(s[i + 1 : end], quoted=True)
                i = end + 1
            elif c == '"':
                literal, i = self.double_quoted(i)
                add(literal, quoted=True)
            elif c in "$`":
                what = "command substitution" if c == "`" else "expansion"
                raise LexError(
                    f"`{self.snippet(i, i + 12)}`: {what} makes the word known only at run time"
                )
            else:  # an unquoted `*`, `?`, `[`, `{`, `}` or `~`
                if c == "[" and "]" in self.rest_of_word(i):
                    raise LexError(
                        f"`{self.snippet(start, i + 1)}`: an unquoted `[` starts a glob bracket "
                        "expression; quote it"
                    )
                if c == "~" and (i == start or s[i - 1] in "=:"):
                    raise LexError(
                        f"`{self.snippet(start, i + 2)}`: an unquoted `~` expands to a home "
                        "directory; quote it"
                    )
                glob = glob or c in "*?"
                add(c, quoted=False)
                i += 1
        self.i = i
        # A trailing backslash-newline only joins lines; the word ends before it.
        while i - start >= 2 and s[i - 1] == "\n" and s[i - 2] == "\\":
            i -= 2
        text = s[start:i]
        if _BRACES.search("".join(skeleton)):
            raise LexError(f"`{text}`: brace expansion turns one word into several")
        joined = "".join(value)
        return SWord(joined, start, i, text, glob, "".join(pattern) if glob else "")

    def rest_of_word(self, i: int) -> str:
        """The raw text from `i` to the next unquoted-looking word break (an over-estimate)."""
        j = i
        while j < self.n and self.s[j] not in _META:
            j += 1
        return self.s[i:j]

    def double_quoted(self, i: int) -> tuple[str, int]:
        """The text inside the double quotes opening at `i`, and the index after them."""
        s, n = self.s, self.n
        j = i + 1
        parts: list[str] = []
        while True:
            if j >= n:
                raise LexError(f"the quote at `{self.snippet(i)}` is never closed")
            c = s[j]
            if c == '"':
                break
            if c in "$`":
                raise LexError(
                    f"`{self.snippet(j, j + 12)}` inside double quotes is expanded at run time"
                )
            if c == "\\" and j + 1 < n:
                nxt = s[j + 1]
                if nxt in _DQ_ESCAPABLE:
                    parts.append(nxt)
                    j += 2
                    continue
                if nxt == "\n":
                    j += 2
                    continue
            parts.append(c)
            j += 1
        return "".join(parts), j + 1


def lex(src: str) -> list[SimpleCommand]:
    """The simple commands of `src`, or LexError naming what is outside the subset."""
    return _Lexer(src).run()


def lex_with_tokens(src: str) -> tuple[list[SimpleCommand], list[Token]]:
    """`lex`, plus where each command, word and redirection is, in source order."""
    lexer = _Lexer(src)
    return lexer.run(), lexer.tokens
