"""A small, complete grammar for print-only awk programs (the part mawk and gawk share).

    program  := item ((";" | newline)* item)*
    item     := "BEGIN" action | "END" action | cond ["," cond] [action] | action
    action   := "{" stmt ((";" | newline) stmt)* "}"
    stmt     := "print" [exprs] | "printf" exprs | "next" | "exit" [expr]
              | NAME ("=" | "+=" | "-=" | "*=" | "%=") expr | NAME ("++" | "--")
    cond     := and ("||" and)* ;  and := not ("&&" not)* ;  not := "!" not | rel
    rel      := /regex/ | expr [relop expr | ("~" | "!~") (/regex/ | expr)]
    expr     := unary (("+" | "-" | "*" | "%") unary | unary)*      (juxtaposition concatenates)
    unary    := ["-" | "+" | "!"] primary
    primary  := NUMBER | "string" | "$" primary | NAME | FUNC "(" [exprs] ")" | "(" expr ")"

Left out is what can write or run: redirection, `getline`, `system`, `close`, `fflush`,
`ENVIRON`, `ARGV`/`ARGC`, arrays, loops, functions, `@`. `/` is never division.
"""

from __future__ import annotations

import re

from plan_lsp.policy.shell.embedded import GrammarError, Scanner, delimited_end

_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")
_DIGITS = frozenset("0123456789")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_USER_VAR = re.compile(r"[a-z_][a-z0-9_]*\Z")
_BUILTIN_VARS = frozenset(
    {"NR", "NF", "FNR", "FILENAME", "FS", "OFS", "ORS", "RS", "SUBSEP", "RSTART", "RLENGTH"}
)
_FUNCTIONS = frozenset(
    {"length", "substr", "index", "tolower", "toupper", "int", "sprintf", "sqrt", "exp",
     "log", "sin", "cos", "atan2", "rand"}
)  # fmt: skip
_KEYWORDS = frozenset(
    {"BEGIN", "END", "print", "printf", "next", "exit", "if", "else", "while", "for", "do",
     "break", "continue", "function", "func", "return", "delete", "getline", "in", "nextfile",
     "BEGINFILE", "ENDFILE", "system", "close", "fflush", "split", "sub", "gsub", "match",
     "srand"}
)  # fmt: skip
_ASSIGN = ("+=", "-=", "*=", "%=", "=")
_RELOPS = ("==", "!=", "<=", ">=", "<", ">")
_BINOPS = frozenset("+-*%")


def check_awk(program: str) -> str | None:
    try:
        _Awk(program).program()
    except GrammarError as exc:
        return f"the awk program {exc}"
    return None


class _Awk(Scanner):
    # -- tokens ------------------------------------------------------------------------------
    def blanks(self, newlines: bool = False) -> None:
        skip = " \t\n" if newlines else " \t"
        while self.i < self.n and self.t[self.i] in skip:
            self.i += 1
        if self.peek() == "#":
            raise GrammarError("has a comment (`#`), which this checker does not read")
        if self.t.startswith("\\\n", self.i):
            raise GrammarError("has a backslash-newline continuation")

    def at(self, token: str) -> bool:
        self.blanks()
        return self.t.startswith(token, self.i)

    def eat(self, token: str) -> bool:
        if self.at(token):
            self.i += len(token)
            return True
        return False

    def expect(self, token: str) -> None:
        if not self.eat(token):
            raise GrammarError(f"expects `{token}` at `{self.rest()}`")

    def rest(self) -> str:
        return self.t[self.i : self.i + 20] or "the end"

    def name(self) -> str | None:
        self.blanks()
        m = _NAME.match(self.t, self.i)
        return m.group(0) if m else None

    def separators(self) -> bool:
        found = False
        self.blanks()
        while self.peek() in (";", "\n"):
            self.i += 1
            found = True
            self.blanks()
        return found

    # -- structure ---------------------------------------------------------------------------
    def program(self) -> None:
        self.separators()
        if self.i >= self.n:
            raise GrammarError("is empty")
        while self.i < self.n:
            self.item()
            self.separators()

    def item(self) -> None:
        word = self.name()
        if word in ("BEGIN", "END"):
            self.i += len(word)
            self.action()
            return
        if self.at("{"):
            self.action()
            return
        self.cond()
        if self.eat(","):
            self.blanks(newlines=True)
            self.cond()
        if self.at("{"):
            self.action()

    def action(self) -> None:
        self.expect("{")
        self.separators()
        self.blanks(newlines=True)
        while not self.at("}"):
            self.statement()
            if not self.separators() and not self.at("}"):
                raise GrammarError(f"has `{self.rest()}` where a statement should end")
            self.blanks(newlines=True)
        self.expect("}")

    def statement(self) -> None:
        word = self.name()
        if word is None:
            raise GrammarError(f"has `{self.rest()}` where a statement should start")
        self.i += len(word)
        if word == "print":
            self.no_redirect("print")
            if self.i < self.n and self.t[self.i] not in ";\n}":
                self.exprs()
            self.no_redirect("print")
            return
        if word == "printf":
            self.exprs()
            self.no_redirect("printf")
            return
        if word == "next":
            return
        if word == "exit":
            self.blanks()
            if self.i < self.n and self.t[self.i] not in ";\n}":
                self.expr()
            return
        if word in _KEYWORDS or word in _FUNCTIONS or not _USER_VAR.match(word):
            raise GrammarError(f"uses `{word}` as a statement, which this grammar does not allow")
        if self.eat("++") or self.eat("--"):
            return
        for op in _ASSIGN:
            if self.eat(op):
                self.expr()
                return
        raise GrammarError(f"has `{word}` without an assignment")

    def no_redirect(self, what: str) -> None:
        self.blanks()
        if self.i < self.n and self.t[self.i] in ">|<":
            raise GrammarError(f"sends `{what}` output somewhere other than stdout")

    # -- conditions --------------------------------------------------------------------------
    def cond(self) -> None:
        self.conj()
        while self.eat("||"):
            self.blanks(newlines=True)
            self.conj()

    def conj(self) -> None:
        self.neg()
        while self.eat("&&"):
            self.blanks(newlines=True)
            self.neg()

    def neg(self) -> None:
        if self.at("!") and not self.at("!=") and not self.at("!~"):
            self.i += 1
            self.neg()
            return
        self.rel()

    def rel(self) -> None:
        if self.regex():
            return
        if self.at("(") and self.paren_cond():
            return
        self.expr()
        if self.eat("~") or self.eat("!~"):
            if not self.regex():
                self.expr()
            return
        for op in _RELOPS:
            if self.eat(op):
                self.expr()
                return

    def paren_cond(self) -> bool:
        """`( cond )` in a condition; False (position restored) when it is `( expr )`."""
        start = self.i
        self.i += 1
        try:
            self.cond()
            self.expect(")")
        except GrammarError:
            self.i = start
            return False
        return True

    def regex(self) -> bool:
        if not self.at("/"):
            return False
        self.i = delimited_end(self.t, self.i + 1, "/", regex=True) + 1
        return True

    # -- expressions -------------------------------------------------------------------------
    def exprs(self) -> None:
        self.expr()
        while self.eat(","):
            self.blanks(newlines=True)
            self.expr()

    def expr(self) -> None:
        self.unary()
        while True:
            self.blanks()
            c = self.peek()
            if c in _BINOPS and not self.t.startswith(("++", "--", "+=", "-=", "*=", "%="), self.i):
                self.i += 1
                self.unary()
            elif self.starts_primary():
                self.unary()
            else:
                return

    def starts_primary(self) -> bool:
        self.blanks()
        if self.i >= self.n:
            return False
        c = self.t[self.i]
        return c in _DIGITS or c in '"$(' or bool(_NAME.match(self.t, self.i))

    def unary(self) -> None:
        self.blanks()
        if (
            self.i < self.n
            and self.t[self.i] in "-+!"
            and not self.t.startswith(("!=", "!~", "++", "--"), self.i)
        ):
            self.i += 1
        self.primary()

    def primary(self) -> None:
        self.blanks()
        c = self.peek()
        if c in _DIGITS:
            self.i = _NUMBER.match(self.t, self.i).end()  # type: ignore[union-attr]
        elif c == '"':
            self.string()
        elif c == "$":
            self.i += 1
            self.primary()
        elif c == "(":
            self.i += 1
            self.expr()
            self.expect(")")
        else:
            word = self.name()
            if word is None:
                raise GrammarError(f"has `{self.rest()}` where a value should be")
            self.i += len(word)
            if word in _FUNCTIONS:
                if self.eat("("):
                    if not self.at(")"):
                        self.exprs()
                    self.expect(")")
                elif word != "length":
                    raise GrammarError(f"uses `{word}` without arguments")
            elif word in _KEYWORDS:
                raise GrammarError(f"uses `{word}`, which this grammar does not allow")
            elif word not in _BUILTIN_VARS and not _USER_VAR.match(word):
                raise GrammarError(f"uses `{word}`, which this grammar does not allow")
            elif self.t.startswith("(", self.i):
                # A name right before `(` is a function call in awk.
                raise GrammarError(f"calls `{word}`, which is not a built-in it allows")
            elif self.at("["):
                raise GrammarError(f"indexes `{word}` as an array")

    def string(self) -> None:
        t, n = self.t, self.n
        j = self.i + 1
        while j < n and t[j] != '"':
            if t[j] == "\n":
                raise GrammarError("has a newline inside a string")
            if t[j] == "\\":
                if j + 1 >= n or t[j + 1] == "\n":
                    raise GrammarError("has a backslash at the end of a string")
                j += 2
            else:
                j += 1
        if j >= n:
            raise GrammarError("has an unterminated string")
        self.i = j + 1
