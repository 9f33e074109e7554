"""One walk over a command's arguments by its database entry, for both rule sets (operands,
`--`, `-5`, `--name=value`, `-name`, `-la`, `-n5`, where a subcommand starts); what an option
means is the rule set's (`argcheck.py`, `argv.py`).
"""

from __future__ import annotations

import re
from typing import Generic, Protocol, TypeVar

from plan_lsp.policy.shell.database import Program

_NUMERIC = re.compile(r"-[0-9]+\Z")


class ArgWord(Protocol):
    @property
    def glob(self) -> bool: ...


W = TypeVar("W", bound=ArgWord)


class Stop(Exception):
    """The rule set has decided (and said why): the walk ends here."""


class ArgWalk(Generic[W]):
    def __init__(self, prog: Program, args: list[W]) -> None:
        self.prog = prog
        self.args = args
        # Options seen so far (the parent command's too, for subcommands).
        self.seen: set[str] = set()

    # The rule set -------------------------------------------------------------------------
    def static(self, word: W) -> str | None:
        """The word as the program will see it; None when only known at run time."""
        raise NotImplementedError

    def run_time_word(self, word: W, ended: bool) -> None:
        """A word only known at run time, in the place of an operand."""

    def option_glob(self, word: W) -> None:
        """An unquoted glob in the place of an option."""

    def takes_rest(self, name: str) -> bool:
        """Whether short option `name` takes the rest of its cluster as its value (`-n5`)."""
        raise NotImplementedError

    def option(self, name: str, attached: str | None, i: int, word: str) -> int:
        """Apply option `name` (with a value given in the same word, if any) found in `word`;
        returns the index of the next word (raise `Stop` to end the walk)."""
        raise NotImplementedError

    # The walk -----------------------------------------------------------------------------
    def walk(self, i: int = 0) -> tuple[list[W], int | None]:
        """The operands, and the index of the subcommand's word (None: none)."""
        prog, args = self.prog, self.args
        operands: list[W] = []
        ended = prog.raw
        while i < len(args):
            word = args[i]
            i += 1
            v = self.static(word)
            if v is None or ended or v == "-" or not v.startswith("-"):
                if prog.subcommands and not operands:
                    return operands, i - 1
                if v is None:
                    self.run_time_word(word, ended)
                elif not prog.permute:
                    ended = True
                operands.append(word)
                continue
            if word.glob:
                self.option_glob(word)
            if v == "--" and not prog.no_double_dash:
                ended = True
            elif prog.numeric and _NUMERIC.match(v):
                continue
            elif prog.single_dash_long or v.startswith("--"):
                name, eq, attached = v.partition("=") if v.startswith("--") else (v, "", "")
                i = self.option(name, attached if eq else None, i, v)
            else:
                i = self.short(v, i)
        return operands, None

    def short(self, v: str, i: int) -> int:
        """`-la` is `-l -a`; a letter that takes a value takes the rest (`-n5`) or the next
        word. A listed option of several letters (`-hh`) is one option."""
        prog = self.prog
        whole = prog.options.get(v)
        if whole is not None and whole.arity == "none":
            return self.option(v, None, i, v)
        if not prog.cluster:
            return self.option(v[:2], v[2:] or None, i, v)
        for j in range(1, len(v)):
            name = "-" + v[j]
            if self.takes_rest(name):
                return self.option(name, v[j + 1 :] or None, i, v)
            i = self.option(name, None, i, v)
        return i
