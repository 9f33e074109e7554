"""Glob patterns matched in linear time, for patterns from untrusted sources.

Permission rules come from a repository's own `.plan-lsp/config.toml` (deny and ask rules),
and the `glob`/`grep` tools take patterns from the model. A glob translated to a backtracking
regular expression (`(?:.*/)?` repeated) can take hours on an 80-byte pattern; this matcher
cannot: a pattern becomes a small NFA (one state per token), simulated on a bit set of active
states, one step per character of the subject, no backtracking. Matching a subject of `n`
characters costs at most `n` steps of a few integer operations on a bit set of the pattern's
length, plus an epsilon closure of at most MAX_WILDCARDS + 1 rounds; steps are remembered per
(state set, character), so a long subject mostly costs one dictionary look-up a character
(60-90 ms a megabyte); a subject lacking a literal every match holds is rejected at C speed.
`GlobSet` runs many globs as one NFA, one pass for all of them. With the limits below
(MAX_PATTERN_CHARS, MAX_WILDCARDS), a source's rule count and the length of argument the
permission engine matches (`permissions.MAX_MATCHED_CHARS`), a decision is bounded.

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
MAX_PATTERN_CHARS = 1024
# Wildcards (`*`, `**`, `?`, classes of more than one character) a pattern may hold.
MAX_WILDCARDS = 32
# Remembered steps (and per-character masks) per compiled pattern, at most; past this the
# table starts again. Fewer for a large NFA: a table holds at most about 256 KiB of state
# sets, so the caches of every compiled pattern stay bounded (tens of MB at worst).
_STEP_CACHE = 1024
_STEP_CACHE_BYTES = 1 << 18

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


def _required(tokens: list[_Token]) -> tuple[str, ...]:
    """Runs of literal tokens every match contains (outside optional groups): a text
    lacking one cannot match, which `str.__contains__` finds at C speed."""
    runs: list[str] = []
    run: list[str] = []
    optional_until = -1
    for i, token in enumerate(tokens):
        if token.skip:
            optional_until = max(optional_until, i + token.skip - 1)
        if token.kind == "lit" and i > optional_until:
            run.append(token.char)
            continue
        if run:
            runs.append("".join(run))
            run = []
    if run:
        runs.append("".join(run))
    return tuple(r for r in runs if r)


# Texts at least this long are checked for a pattern's required literals first.
_PREFILTER_CHARS = 256


class _Nfa:
    """The NFA of one or more token lists side by side: list k occupies states
    [offset_k, offset_k + len_k], the last being its accepting state (no edges out)."""

    __slots__ = (
        "_accepts",
        "_eps1",
        "_eps2",
        "_eps3",
        "_limit",
        "_lit",
        "_masks",
        "_others",
        "_star_any",
        "_star_seg",
        "_start",
        "_steps",
    )

    def __init__(self, token_lists: list[list[_Token]]) -> None:
        self._lit: dict[str, int] = {}
        self._others: list[tuple[int, _Token]] = []
        self._star_any = self._star_seg = self._eps1 = self._eps2 = self._eps3 = 0
        self._accepts: list[int] = []
        starts = 0
        offset = 0
        for tokens in token_lists:
            for i, token in enumerate(tokens):
                bit = 1 << (offset + i)
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
            starts |= 1 << offset
            self._accepts.append(1 << (offset + len(tokens)))
            offset += len(tokens) + 1
        self._start = self._close(starts)
        self._limit = max(64, min(_STEP_CACHE, _STEP_CACHE_BYTES // (offset // 8 + 64)))
        self._steps: dict[tuple[int, str], int] = {}
        self._masks: dict[str, tuple[int, int]] = {}

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
            if len(self._masks) < self._limit:
                self._masks[c] = masks
        return masks

    def _step(self, states: int, c: str) -> int:
        consume, loop = self._char_masks(c)
        return self._close(((states & consume) << 1) | (states & loop))

    def _run(self, text: str) -> int:
        """The set of states after all of `text` (0 once nothing can match any more)."""
        states = self._start
        steps = self._steps
        for c in text:
            key = (states, c)
            nxt = steps.get(key)
            if nxt is None:
                nxt = self._step(states, c)
                if len(steps) >= self._limit:
                    steps.clear()
                steps[key] = nxt
            states = nxt
            if not states:
                return 0
        return states


class Glob(_Nfa):
    """A compiled glob; `match(text)` says whether all of `text` matches."""

    __slots__ = ("path_mode", "pattern", "required", "tokens")

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
        self.tokens = tokens
        self.required = _required(tokens)
        super().__init__([tokens])

    def __repr__(self) -> str:
        return f"Glob({self.pattern!r}, path_mode={self.path_mode})"

    def possible(self, text: str) -> bool:
        """False when `text` lacks a literal every match holds (a quick, exact rejection)."""
        return len(text) < _PREFILTER_CHARS or all(r in text for r in self.required)

    def match(self, text: str) -> bool:
        if not self.possible(text):
            return False
        return bool(self._run(text) & self._accepts[0])


class GlobSet:
    """Several globs matched in one pass over a text: `matching(text)` is the set of the
    indices of those that match all of it. The cost is one pass whatever their number
    (each step works on a bit set of all their states), so a repository's many rules
    cannot multiply the time a long command takes."""

    def __init__(self, globs: list[Glob]) -> None:
        self.globs = globs
        self._sets: dict[tuple[int, ...], _Nfa] = {}

    def matching(self, text: str) -> frozenset[int]:
        chosen = tuple(i for i, g in enumerate(self.globs) if g.possible(text))
        if not chosen:
            return frozenset()
        nfa = self._sets.get(chosen)
        if nfa is None:
            if len(self._sets) >= 4:
                self._sets.clear()
            nfa = self._sets[chosen] = _Nfa([self.globs[i].tokens for i in chosen])
        states = nfa._run(text)
        if not states:
            return frozenset()
        return frozenset(i for i, bit in zip(chosen, nfa._accepts, strict=True) if states & bit)


@lru_cache(maxsize=256)
def compile_glob(pattern: str, *, path_mode: bool = True) -> Glob:
    """The compiled glob (cached). GlobTooComplex over the limits, BadGlob for a backwards
    character range; both are ValueError."""
    return Glob(pattern, path_mode=path_mode)


@lru_cache(maxsize=16)
def compile_glob_set(patterns: tuple[str, ...], *, path_mode: bool) -> GlobSet:
    """The patterns as one GlobSet (cached); ValueError as `compile_glob`."""
    return GlobSet([compile_glob(p, path_mode=path_mode) for p in patterns])


def glob_problem(pattern: str, *, path_mode: bool = True) -> str | None:
    """Why `pattern` cannot be used, or None."""
    try:
        compile_glob(pattern, path_mode=path_mode)
    except ValueError as exc:
        return str(exc)
    return None
