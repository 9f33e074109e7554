"""Small, complete grammars for the print-only programs `classified` accepts (sed, jq).

A program passes only when the grammar parses all of it. A bracket expression may not hold
the delimiter, a backslash or a newline (GNU sed ends `/[/]/` at the last slash, others do
not), and nests only `[:class:]`.
"""

from __future__ import annotations

import re

_CLASS = re.compile(
    r"\[:(alpha|digit|alnum|upper|lower|space|blank|punct|print|graph|cntrl|xdigit):\]"
)


class GrammarError(Exception):
    pass


class Scanner:
    """A program's text and the position reached in it."""

    def __init__(self, text: str) -> None:
        self.t = text
        self.n = len(text)
        self.i = 0

    def peek(self) -> str:
        return self.t[self.i] if self.i < self.n else ""


def bracket_end(text: str, i: int, delim: str) -> int:
    """`text[i]` is `[`; the index after the bracket expression's `]`."""
    n = len(text)
    k = i + 1
    if k < n and text[k] == "^":
        k += 1
    if k < n and text[k] == "]":
        k += 1
    while k < n:
        c = text[k]
        if c == "]":
            return k + 1
        if c == "[":
            m = _CLASS.match(text, k)
            if m is None:
                raise GrammarError(
                    "has a `[` inside a bracket expression this checker cannot follow"
                )
            k = m.end()
            continue
        if c == delim or c in "\\\n":
            raise GrammarError(
                "has the delimiter, a backslash or a newline inside a bracket expression, "
                "where readers of the program disagree"
            )
        k += 1
    raise GrammarError("has an unterminated bracket expression")


def delimited_end(text: str, i: int, delim: str, *, regex: bool) -> int:
    """From `i` (just after the opening delimiter), the index of the closing delimiter;
    `regex`: the text is a regular expression (not an s/// replacement or y/// set)."""
    what = "regular expression" if regex else "replacement"
    n = len(text)
    while i < n:
        c = text[i]
        if c == delim:
            return i
        if c == "\n":
            raise GrammarError(f"has a newline inside a {what}")
        if c == "\\":
            if i + 1 >= n or text[i + 1] == "\n":
                raise GrammarError(f"has a backslash at the end of a {what}")
            i += 2
        elif c == "[" and regex:
            i = bracket_end(text, i, delim)
        else:
            i += 1
    raise GrammarError(f"has an unterminated {what}")


# sed ----------------------------------------------------------------------------------
# Print-only commands: p (print), = (line number), d (delete from output), q/Q (quit),
# s/// (substitute, output only) and y/// (transliterate). No w/W/r/R/e, no `e` or `w` flag
# on s, no blocks, labels, branches or comments.
_S_DELIMS = frozenset("/|#,:@%_+")
_NUMBER = re.compile(r"[0-9]+")
_DIGITS = frozenset("0123456789")
_S_FLAGS = frozenset("gpiImM0123456789")
_SED_REFUSED = {"w": "writes a file", "W": "writes a file", "e": "runs a command"} | dict.fromkeys(
    "rR", "reads a file named in the program"
)


def check_sed(script: str) -> str | None:
    try:
        _Sed(script).run()
    except GrammarError as exc:
        return f"the sed program {exc}"
    return None


class _Sed(Scanner):
    def blanks(self) -> None:
        while self.i < self.n and self.t[self.i] in " \t":
            self.i += 1

    def run(self) -> None:
        while True:
            while self.i < self.n and self.t[self.i] in " \t\n;":
                self.i += 1
            if self.i >= self.n:
                return
            self.command()
            self.blanks()
            if self.i < self.n and self.t[self.i] not in ";\n":
                raise GrammarError(f"has `{self.t[self.i]}` where a command should end")

    def command(self) -> None:
        if self.address(first=True) and self.peek() == ",":
            self.i += 1
            if not self.address(first=False):
                raise GrammarError("has a `,` without a second address")
        self.blanks()
        if self.peek() == "!":
            self.i += 1
            self.blanks()
        c = self.peek()
        self.i += 1
        if c in ("p", "=", "d"):
            return
        if c in ("q", "Q"):
            self.blanks()
            m = _NUMBER.match(self.t, self.i)
            if m is not None:
                self.i = m.end()
            return
        if c == "s":
            self.substitute()
            return
        if c == "y":
            delim = self.delimiter("y")
            self.i = delimited_end(self.t, self.i, delim, regex=False) + 1
            self.i = delimited_end(self.t, self.i, delim, regex=False) + 1
            return
        if c in _SED_REFUSED:
            raise GrammarError(f"uses `{c}`, which {_SED_REFUSED[c]}")
        shown = c if c else "the end"
        raise GrammarError(
            f"uses `{shown}`, which is not one of the print-only commands p = d q Q s y"
        )

    def address(self, first: bool) -> bool:
        t = self.t
        c = self.peek()
        if c in _DIGITS:
            self.i = _NUMBER.match(t, self.i).end()  # type: ignore[union-attr]
            if self.peek() == "~":
                self.i += 1
                self.number()
            return True
        if c == "$":
            self.i += 1
            return True
        if not first and c in "+~":
            self.i += 1
            self.number()
            return True
        if c == "/":
            self.i = delimited_end(t, self.i + 1, "/", regex=True) + 1
            while self.peek() in ("I", "M"):
                self.i += 1
            return True
        if c == "\\":
            raise GrammarError("uses a custom address delimiter")
        return False

    def number(self) -> None:
        m = _NUMBER.match(self.t, self.i)
        if m is None:
            raise GrammarError("has an address step without a number")
        self.i = m.end()

    def delimiter(self, cmd: str) -> str:
        d = self.peek()
        if d not in _S_DELIMS:
            raise GrammarError(f"has `{cmd}` with a delimiter this checker does not accept")
        self.i += 1
        return d

    def substitute(self) -> None:
        delim = self.delimiter("s")
        self.i = delimited_end(self.t, self.i, delim, regex=True) + 1
        self.i = delimited_end(self.t, self.i, delim, regex=False) + 1
        while self.i < self.n and self.t[self.i] in _S_FLAGS:
            self.i += 1
        c = self.peek()
        if c == "w":
            raise GrammarError("uses the `s///w` flag, which writes a file")
        if c == "e":
            raise GrammarError("uses the `s///e` flag, which runs the result as a command")


# jq -----------------------------------------------------------------------------------
# jq programs cannot write files or run programs; what they can reach outside their input
# is the environment (`env`, `$ENV`) and module files (`import`, `include`, `modulemeta`,
# `mod::fn`). Every identifier in the program is checked, inside strings too (a string
# interpolation `\(...)` is code).
_JQ_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*")
_JQ_DENIED = frozenset({"env", "ENV", "import", "include", "modulemeta", "get_search_list"})


def check_jq(program: str) -> str | None:
    for m in _JQ_IDENT.finditer(program):
        word = m.group(0)
        if "::" in word:
            return f"the jq program calls `{word}` from a module file"
        if word in _JQ_DENIED:
            what = "the environment" if word.lower() == "env" else "module files"
            return f"the jq program uses `{word}`, which reads {what}"
    return None
