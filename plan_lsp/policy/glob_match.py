"""Glob patterns matched in linear time (RE2), for patterns from untrusted sources: a glob as a
backtracking regular expression can take hours on 80 bytes.

- path mode: `*`, `?` stay in one segment; `**` matches anything; `**/` matches nothing or
  anything ending in `/`; `[...]` a class (`!`/`^` negates, and then matches `/` too; `]`
  first is a member; `\\` is plain); a `[` without its `]` is literal.
- command mode: `*` anything, `?` one character, a trailing ` *` also the bare command.
- the whole subject must match; case matters; a newline is a character like any other.
"""

from __future__ import annotations

from functools import lru_cache

import re2

# A pattern longer than this is refused (a real one is a few dozen characters).
MAX_PATTERN_CHARS = 1024
# Wildcards (`*`, `**`, `?`, classes of more than one character) a pattern may hold.
MAX_WILDCARDS = 32


class GlobTooComplex(ValueError):
    """A pattern over MAX_PATTERN_CHARS or MAX_WILDCARDS."""


class BadGlob(ValueError):
    """A pattern that cannot be compiled (a character range running backwards)."""


def _char(c: str) -> str:
    return c if c.isascii() and c.isalnum() else f"\\x{{{ord(c):x}}}"


def _class(body: str) -> str:
    """A class body as the regular-expression class `[body]` read it (backslashes plain):
    `a-` at the end holds both, a range running backwards is refused."""
    negate = body[:1] in ("!", "^")
    body = body[1:] if negate else body
    members: dict[str, None] = {}  # a character, or a range `first-last`
    i, n = 0, len(body)
    while i < n:
        first = body[i]
        if i + 2 < n and body[i + 1] == "-":
            last = body[i + 2]
            if ord(last) < ord(first):
                raise BadGlob(f"the character range {first}-{last} in the pattern runs backwards")
            members[f"{_char(first)}-{_char(last)}"] = None
            i += 3
            continue
        members[_char(first)] = None
        i += 1
    if not negate and len(members) == 1 and "-" not in (only := next(iter(members))):
        return only  # `[*]`, `[aa]`: a literal
    return f"[{'^' if negate else ''}{''.join(members)}]"


def _class_end(pattern: str, i: int) -> int | None:
    """The index of the `]` closing the class opened at `i`, or None (a literal `[`)."""
    j = i + 1
    if pattern[j : j + 1] in ("!", "^"):
        j += 1
    if pattern[j : j + 1] == "]":
        j += 1
    end = pattern.find("]", j)
    return end if end >= 0 else None


def glob_to_re2(pattern: str, *, path_mode: bool = True) -> str:
    """The regular expression (RE2 syntax) of `pattern`; GlobTooComplex over the limits,
    BadGlob for a backwards range. Adjacent stars count as one wildcard."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise GlobTooComplex(
            f"the pattern has {len(pattern):,} characters, more than the limit of "
            f"{MAX_PATTERN_CHARS:,} (pattern_too_long)"
        )
    out: list[str] = []
    wildcards = 0
    star = False  # the last item was a star (another one next to it is the same star)
    tail = not path_mode and pattern.endswith(" *")
    if tail:
        pattern = pattern[:-2]
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        item, counts, is_star = _char(c), True, False
        if c == "*":
            if path_mode and pattern.startswith("**/", i):
                item, i = "(?:.*/)?", i + 2
            else:
                double = path_mode and pattern.startswith("**", i)
                item, is_star = (".*" if double or not path_mode else "[^/]*"), True
                counts = not star
                i += 1 if double else 0
        elif c == "?":
            item = "[^/]" if path_mode else "."
        elif c == "[" and (end := _class_end(pattern, i)) is not None:
            item, i = _class(pattern[i + 1 : end]), end
            counts = item.startswith("[")
        else:
            counts = False
        wildcards += counts
        star = is_star
        out.append(item)
        i += 1
    if tail:
        out.append("(?: .*)?")
        wildcards += 1
    if wildcards > MAX_WILDCARDS:
        raise GlobTooComplex(
            f"the pattern has {wildcards} wildcards, more than the limit of "
            f"{MAX_WILDCARDS} (too_many_wildcards)"
        )
    return "".join(out)


def _subject(text: str) -> bytes:
    # A lone surrogate (a file name's undecodable byte) stays one character for RE2.
    return text.encode("utf-8", "surrogatepass")


class Glob:
    """A compiled glob; `match(text)` says whether all of `text` matches."""

    def __init__(self, pattern: str, *, path_mode: bool = True) -> None:
        source = glob_to_re2(pattern, path_mode=path_mode)
        try:
            self._regex = re2.compile(b"(?s)" + source.encode())  # `.` matches a newline too
        except re2.error as exc:  # past RE2's memory budget for one program
            raise GlobTooComplex(f"the pattern is too large to compile ({exc})") from exc

    def match_bytes(self, subject: bytes) -> bool:
        return self._regex.fullmatch(subject) is not None

    def match(self, text: str) -> bool:
        return self.match_bytes(_subject(text))


class GlobSet:
    """Several globs matched against one text: `matching(text)` is the set of the indices
    of those that match all of it (not an `RE2::Set`: its DFA may give up on a long text,
    which the binding cannot tell from "no match")."""

    def __init__(self, globs: list[Glob]) -> None:
        self.globs = globs

    def matching(self, text: str) -> frozenset[int]:
        subject = _subject(text)
        return frozenset(i for i, g in enumerate(self.globs) if g.match_bytes(subject))


@lru_cache(maxsize=256)
def compile_glob(pattern: str, *, path_mode: bool = True) -> Glob:
    """The compiled glob (cached); GlobTooComplex or BadGlob, both ValueError."""
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
