"""The linear-time glob matcher: a table of its documented semantics, the same answers as
the regular expressions rules were compiled to before (on small patterns, where those are
quick), its limits, and patterns that made the old matcher backtrack for hours."""

from __future__ import annotations

import re
import warnings

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from plan_lsp.policy.glob_match import (
    MAX_PATTERN_CHARS,
    MAX_WILDCARDS,
    BadGlob,
    Glob,
    GlobSet,
    GlobTooComplex,
    compile_glob,
    glob_problem,
)


def old_glob_to_regex(pattern: str, *, path_mode: bool = True) -> re.Pattern[str]:
    """The matcher rules used before (a backtracking regular expression), kept as the
    reference for the semantics."""
    out: list[str] = []
    i, n = 0, len(pattern)
    tail = ""
    if not path_mode and pattern.endswith(" *"):
        pattern, n, tail = pattern[:-2], n - 2, "(?: .*)?"
    while i < n:
        c = pattern[i]
        if c == "*":
            if path_mode and pattern.startswith("**", i):
                i += 2
                if i < n and pattern[i] == "/":
                    out.append("(?:.*/)?")
                    i += 1
                else:
                    out.append(".*")
                continue
            out.append("[^/]*" if path_mode else ".*")
        elif c == "?":
            out.append("[^/]" if path_mode else ".")
        elif c == "[":
            j = i + 1
            if j < n and pattern[j] in "!^":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : j]
                negate = body[:1] in ("!", "^")
                body = body[1:] if negate else body
                body = body.replace("\\", "\\\\")
                out.append(f"[{'^' if negate else ''}{body}]")
                i = j
        else:
            out.append(re.escape(c))
        i += 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # "possible nested set": literal
        return re.compile("".join(out) + tail + r"\Z", re.DOTALL)


PATH_TABLE = [
    ("src/**", "src/a.py", True),
    ("src/**", "src/deep/er/a.py", True),
    ("src/**", "src/", True),
    ("src/**", "srcx/a.py", False),
    ("src/*.py", "src/a.py", True),
    ("src/*.py", "src/x/a.py", False),
    ("**/*.py", "a.py", True),
    ("**/*.py", "x/y/a.py", True),
    ("**/*.py", "x/y/a.pyc", False),
    ("a/**/b", "a/b", True),
    ("a/**/b", "a/x/y/b", True),
    ("a/**/b", "a/xb", False),
    ("**", "", True),
    ("**", "a/b/c", True),
    ("*", "a/b", False),
    ("*", "", True),
    ("*.md", "docs/a.md", False),
    ("a?.txt", "ab.txt", True),
    ("a?.txt", "a/.txt", False),
    ("[ab].txt", "b.txt", True),
    ("[!ab].txt", "b.txt", False),
    ("[!ab].txt", "c.txt", True),
    ("[!a]", "/", True),  # a negated class matches '/' too
    ("[^ab].txt", "c.txt", True),
    ("[a-c]x", "bx", True),
    ("[a-c]x", "dx", False),
    ("[]]x", "]x", True),
    ("[!]]x", "]x", False),
    ("[a-]x", "-x", True),
    ("[ab.txt", "[ab.txt", True),
    ("[*]", "*", True),
    ("[*]", "a", False),
    ("a\\b", "a\\b", True),
    ("[\\]", "\\", True),
    (".env", ".env", True),
    ("secrets/**", "secrets/.env\n", True),
]

COMMAND_TABLE = [
    ("git log *", "git log --oneline -3", True),
    ("git log *", "git log", True),
    ("git log *", "git logx", False),
    ("git log *", "git status", False),
    ("npm run *", "npm run test/unit", True),
    ("ls", "ls -la", False),
    ("rm *", "rm -rf /", True),
    ("*rm*", "sudo rm x", True),
    ("*curl*", "wget x", False),
    ("echo ?", "echo /", True),
    ("a*b*c", "a\nb\nc", True),
    (" *", "", True),
    ("mcp__*", "mcp__db__query", True),
    ("mcp__db__*", "mcp__git__log", False),
]


@pytest.mark.parametrize(("pattern", "text", "matches"), PATH_TABLE)
def test_path_table(pattern: str, text: str, matches: bool) -> None:
    assert compile_glob(pattern, path_mode=True).match(text) is matches
    assert (old_glob_to_regex(pattern, path_mode=True).match(text) is not None) is matches


@pytest.mark.parametrize(("pattern", "text", "matches"), COMMAND_TABLE)
def test_command_table(pattern: str, text: str, matches: bool) -> None:
    assert compile_glob(pattern, path_mode=False).match(text) is matches
    assert (old_glob_to_regex(pattern, path_mode=False).match(text) is not None) is matches


# Small alphabets, so that wildcards, classes and separators meet often.
_PATTERN_CHARS = st.sampled_from([*"ab/.-*?[]!^ \\", "**", "**/", "[a-b]", "[!a]"])
_TEXT_CHARS = st.sampled_from(list("ab/.- *?[]!^\\\n"))


@st.composite
def _patterns(draw: st.DrawFn) -> str:
    return "".join(draw(st.lists(_PATTERN_CHARS, max_size=9)))


def _old_or_none(pattern: str, path_mode: bool) -> re.Pattern[str] | None:
    try:
        return old_glob_to_regex(pattern, path_mode=path_mode)
    except re.error:
        return None


@given(_patterns(), st.text(_TEXT_CHARS, max_size=10), st.booleans())
def test_same_answers_as_the_regular_expressions(pattern: str, text: str, path_mode: bool) -> None:
    old = _old_or_none(pattern, path_mode)
    if old is None:  # the old compiler refused it (a backwards range): so does the new one
        with pytest.raises(BadGlob):
            Glob(pattern, path_mode=path_mode)
        return
    assert Glob(pattern, path_mode=path_mode).match(text) is (old.match(text) is not None)


@given(st.text(_TEXT_CHARS, max_size=12), st.booleans())
def test_an_escaped_text_matches_exactly_itself(text: str, path_mode: bool) -> None:
    from plan_lsp.policy.permissions import escape_glob

    glob = Glob(escape_glob(text), path_mode=path_mode)
    assert glob.match(text)
    assert not glob.match(text + "a")


def test_limits_are_named_errors() -> None:
    with pytest.raises(GlobTooComplex, match="pattern_too_long"):
        Glob("a" * (MAX_PATTERN_CHARS + 1))
    with pytest.raises(GlobTooComplex, match="too_many_wildcards"):
        Glob("*a" * (MAX_WILDCARDS + 1))
    with pytest.raises(BadGlob, match="runs backwards"):
        Glob("[z-a]")
    assert Glob("*a" * MAX_WILDCARDS).match("a" * MAX_WILDCARDS)
    # escaped characters are literals, not wildcards
    assert Glob("[*]" * (MAX_WILDCARDS * 2)).match("*" * (MAX_WILDCARDS * 2))
    assert glob_problem("*a" * 100) is not None and glob_problem("src/**") is None
    assert glob_problem("*" * 100) is None  # adjacent stars are one


# Patterns that made the regular expressions backtrack (each `(?:.*/)?` or `.*` tries every
# split of the subject): seconds for these subjects with the old matcher, hours for longer.
PATHOLOGICAL = [
    ("**/" * 20 + "x", "a/" * 40 + "b", True),
    ("*/" * 15 + "*x", "a/" * 2000 + "b", True),
    ("*a*a*a*a*a*a*a*a*a*a*a*a*b", "a" * 5000, False),
    ("**a**a**a**a**a**a**a**a**a**a**b", "a" * 5000, False),
]


@pytest.mark.parametrize(("pattern", "text", "path_mode"), PATHOLOGICAL)
def test_pathological_patterns_end(pattern: str, text: str, path_mode: bool) -> None:
    glob = Glob(pattern, path_mode=path_mode)
    assert glob.match(text) is False
    assert glob.match(text * 100) is False  # 200-500 KB subjects: still one pass


def test_a_megabyte_subject_is_one_pass() -> None:
    glob = Glob("*rm -rf*", path_mode=False)
    assert glob.match("echo " + "x" * 1_000_000 + " && rm -rf /")
    assert not glob.match("echo " + "x" * 1_000_000)


@given(_patterns(), st.text(_TEXT_CHARS, min_size=256, max_size=400), st.booleans())
def test_long_subjects_get_the_same_answers(pattern: str, text: str, path_mode: bool) -> None:
    # The reference backtracks: with three or more stars a long subject costs it minutes.
    assume(pattern.count("*") <= 2)
    old = _old_or_none(pattern, path_mode)
    if old is not None:
        assert Glob(pattern, path_mode=path_mode).match(text) is (old.match(text) is not None)


def test_non_ascii_and_undecodable_characters_are_one_character() -> None:
    assert Glob("caf?/*.txt").match("café/ünï.txt")
    assert Glob("?").match("\udcff")  # a file name's undecodable byte (surrogateescape)
    assert Glob("a[!b]c").match("a\udcffc") and not Glob("a[!\udcff]c").match("a\udcffc")
    assert Glob("\U0001f600*", path_mode=False).match("\U0001f600 x")


@given(
    st.lists(_patterns(), min_size=1, max_size=6),
    st.text(_TEXT_CHARS, max_size=10) | st.text(_TEXT_CHARS, min_size=256, max_size=300),
    st.booleans(),
)
def test_a_set_answers_as_its_globs_one_by_one(
    patterns: list[str], text: str, path_mode: bool
) -> None:
    globs = []
    for pattern in patterns:
        try:
            globs.append(Glob(pattern, path_mode=path_mode))
        except BadGlob:
            continue
    expected = frozenset(i for i, g in enumerate(globs) if g.match(text))
    assert GlobSet(globs).matching(text) == expected
