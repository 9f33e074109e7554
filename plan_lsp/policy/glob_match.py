"""Glob patterns matched in linear time, for patterns from untrusted sources.

Permission rules come from a repository's own `.plan-lsp/config.toml` (deny and ask rules),
and the `glob`/`grep` tools take patterns from the model. A glob translated to a backtracking
regular expression (`(?:.*/)?` repeated) can take hours on an 80-byte pattern; this matcher
cannot: a pattern becomes a small NFA (one state per token), simulated on a bit set of active
states, one step per character of the subject, no backtracking. Matching a subject of `n`
characters costs at most `n` steps of a few integer operations on a bit set of the pattern's
length, plus an epsilon closure of at most MAX_WILDCARDS + 1 rounds; steps are remembered per
(state set, character), so a long subject mostly costs one dictionary look-up a character.
With the limits below (MAX_PATTERN_CHARS, MAX_WILDCARDS) and the agent's cap on a tool
argument (1 M characters) one match is bounded (tens of milliseconds a megabyte).

Semantics (the same as the regular expressions the rules used before):

- path mode: `*` and `?` stay inside one segment (never match `/`); `**` matches anything,
  `/` included; `**/` matches nothing or anything ending in `/` (so `**/*.py` matches
  `a.py`); `[...]` is a class (`[!...]`/`[^...]` negated, a negated class matches `/` too;
  `]` first is a member, ranges `a-z`, `\\` is a plain character); a `[` without its `]` is
  literal.
- command mode: `*` matches anything, `?` any one character, and a trailing ` *` also
  matches the bare command (`git log *` matches `git log`).
- the whole subject must match.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

# A pattern longer than this is refused (a real one is a few dozen characters).
MAX_PATTERN_CHARS = 4096
# Wildcards (`*`, `**`, `?`, classes of more than one character) a pattern may hold.
MAX_WILDCARDS = 32
# Remembered steps per compiled pattern; past this the table starts again (bounded memory).
_STEP_CACHE = 4096

_Kind = Literal["lit", "any", "seg", "class", "star_any", "star_seg", "nop"]


class GlobTooComplex(ValueError):
    """A pattern over MAX_PATTERN_CHARS or MAX_WILDCARDS."""


class BadGlob(ValueError):
    """A pattern that cannot be compiled (a character range running backwards)."""


@dataclass(frozen=True)
class _Class:
    negate: bool
    chars: frozenset[str]
    ranges: tuple[tuple[int, int], ...]

    def accepts(self, c: str) -> bool:
        inside = c in self.chars or any(lo <= ord(c) <= hi for lo, hi in self.ranges)
        return inside != self.negate


@dataclass(frozen=True)
class _Token:
    kind: _Kind
    char: str = ""
    cls: _Class | None = None
    # An epsilon edge from this state past this many tokens (an optional group), or 0.
    skip: int = 0


def _parse_class(body: str) -> _Class:
    """A class body as the regular-expression class `[body]` read it (backslashes plain)."""
    negate = body[:1] in ("!", "^")
    if negate:
        body = body[1:]
    chars: set[str] = set()
    ranges: list[tuple[int, int]] = []
    i, n = 0, len(body)
    while i < n:
        first = body[i]
        i += 1
        if i < n and body[i] == "-":
            if i + 1 >= n:  # `a-` at the end: both are members
                chars.update((first, "-"))
                i += 1
                continue
            last = body[i + 1]
            if ord(last) < ord(first):
                raise BadGlob(f"the character range {first}-{last} in the pattern runs backwards")
            ranges.append((ord(first), ord(last)))
            i += 2
            continue
        chars.add(first)
    return _Class(negate, frozenset(chars), tuple(ranges))


def _class_end(pattern: str, i: int) -> int | None:
    """The index of the `]` closing the class opened at `i`, or None (a literal `[`)."""
    n = len(pattern)
    j = i + 1
    if j < n and pattern[j] in "!^":
        j += 1
    if j < n and pattern[j] == "]":
        j += 1
    while j < n and pattern[j] != "]":
        j += 1
    return j if j < n else None


def _add_star(out: list[_Token], kind: _Kind) -> None:
    """Append a star; next to another star it is one (`.*.*` and `.*[^/]*` are `.*`)."""
    if out and out[-1].kind in ("star_any", "star_seg"):
        if kind == "star_any" and out[-1].kind == "star_seg":
            out[-1] = _Token("star_any")
        return
    out.append(_Token(kind))


def _tokens(pattern: str, path_mode: bool) -> list[_Token]:
    out: list[_Token] = []
    i, n = 0, len(pattern)
    tail = False
    if not path_mode and pattern.endswith(" *"):
        n -= 2
        tail = True
    while i < n:
        c = pattern[i]
        if c == "*":
            if path_mode and pattern.startswith("**", i) and i + 1 < n:
                i += 2
                if i < n and pattern[i] == "/":
                    # (?:.*/)? : an entry that skips the group, or anything then '/'
                    out.append(_Token("nop", skip=3))
                    out.append(_Token("star_any"))
                    out.append(_Token("lit", "/"))
                    i += 1
                else:
                    _add_star(out, "star_any")
                continue
            _add_star(out, "star_seg" if path_mode else "star_any")
        elif c == "?":
            out.append(_Token("seg" if path_mode else "any"))
        elif c == "[":
            end = _class_end(pattern[:n], i)
            if end is None:
                out.append(_Token("lit", c))
            else:
                cls = _parse_class(pattern[i + 1 : end])
                if not cls.negate and not cls.ranges and len(cls.chars) == 1:
                    out.append(_Token("lit", next(iter(cls.chars))))  # `[*]`: a literal
                else:
                    out.append(_Token("class", cls=cls))
                i = end
        else:
            out.append(_Token("lit", c))
        i += 1
    if tail:  # (?: .*)?
        out.append(_Token("lit", " ", skip=2))
        out.append(_Token("star_any"))
    return out


def check_glob(pattern: str) -> None:
    """Raise GlobTooComplex when `pattern` is over the limits (before any compiling)."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise GlobTooComplex(
            f"the pattern has {len(pattern):,} characters, more than the limit of "
            f"{MAX_PATTERN_CHARS:,} (pattern_too_long)"
        )


def _wildcards(tokens: list[_Token]) -> int:
    return sum(1 for t in tokens if t.kind not in ("lit", "nop"))


class Glob:
    """A compiled glob; `match(text)` says whether all of `text` matches."""

    __slots__ = (
        "_accept",
        "_eps1",
        "_eps2",
        "_eps3",
        "_lit",
        "_masks",
        "_others",
        "_star_any",
        "_star_seg",
        "_start",
        "_steps",
        "path_mode",
        "pattern",
    )

    def __init__(self, pattern: str, *, path_mode: bool = True) -> None:
        check_glob(pattern)
        tokens = _tokens(pattern, path_mode)
        count = _wildcards(tokens)
        if count > MAX_WILDCARDS:
            raise GlobTooComplex(
                f"the pattern has {count} wildcards, more than the limit of "
                f"{MAX_WILDCARDS} (too_many_wildcards)"
            )
        self.pattern = pattern
        self.path_mode = path_mode
        # State i: the first i tokens are matched; state len(tokens) accepts.
        self._accept = 1 << len(tokens)
        self._lit: dict[str, int] = {}
        self._others: list[tuple[int, _Token]] = []
        self._star_any = self._star_seg = self._eps1 = self._eps2 = self._eps3 = 0
        for i, token in enumerate(tokens):
            bit = 1 << i
            if token.kind == "lit":
                self._lit[token.char] = self._lit.get(token.char, 0) | bit
            elif token.kind == "star_any":
                self._star_any |= bit
                self._eps1 |= bit
            elif token.kind == "star_seg":
                self._star_seg |= bit
                self._eps1 |= bit
            elif token.kind == "nop":
                self._eps1 |= bit
            else:
                self._others.append((bit, token))
            if token.skip == 2:
                self._eps2 |= bit
            elif token.skip == 3:
                self._eps3 |= bit
        self._start = self._close(1)
        self._steps: dict[tuple[int, str], int] = {}
        self._masks: dict[str, tuple[int, int]] = {}

    def __repr__(self) -> str:
        return f"Glob({self.pattern!r}, path_mode={self.path_mode})"

    def _close(self, states: int) -> int:
        """Add every state reachable without consuming a character (edges go forward)."""
        eps1, eps2, eps3 = self._eps1, self._eps2, self._eps3
        while True:
            grown = (
                states | ((states & eps1) << 1) | ((states & eps2) << 2) | ((states & eps3) << 3)
            )
            if grown == states:
                return states
            states = grown

    def _char_masks(self, c: str) -> tuple[int, int]:
        """(states whose token consumes `c`, star states that loop on `c`)."""
        masks = self._masks.get(c)
        if masks is None:
            consume = self._lit.get(c, 0)
            for bit, token in self._others:
                if token.kind == "any" or (token.kind == "seg" and c != "/"):
                    consume |= bit
                elif token.kind == "class" and token.cls is not None and token.cls.accepts(c):
                    consume |= bit
            loop = self._star_any | (self._star_seg if c != "/" else 0)
            masks = (consume, loop)
            if len(self._masks) < _STEP_CACHE:
                self._masks[c] = masks
        return masks

    def _step(self, states: int, c: str) -> int:
        consume, loop = self._char_masks(c)
        return self._close(((states & consume) << 1) | (states & loop))

    def match(self, text: str) -> bool:
        states = self._start
        steps = self._steps
        for c in text:
            key = (states, c)
            nxt = steps.get(key)
            if nxt is None:
                nxt = self._step(states, c)
                if len(steps) >= _STEP_CACHE:
                    steps.clear()
                steps[key] = nxt
            states = nxt
            if not states:
                return False
        return bool(states & self._accept)


@lru_cache(maxsize=2048)
def compile_glob(pattern: str, *, path_mode: bool = True) -> Glob:
    """The compiled glob (cached). GlobTooComplex over the limits, BadGlob for a backwards
    character range; both are ValueError."""
    return Glob(pattern, path_mode=path_mode)


def glob_problem(pattern: str, *, path_mode: bool = True) -> str | None:
    """Why `pattern` cannot be used, or None."""
    try:
        compile_glob(pattern, path_mode=path_mode)
    except ValueError as exc:
        return str(exc)
    return None
