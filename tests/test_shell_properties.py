"""Property tests: the classifier never raises and is deterministic; any forbidden fragment
refuses under `classified`; and its readings agree with the real bash, sed and awk."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from plan_lsp.policy.shell import PROTECTIONS, Protection, classify_command
from plan_lsp.policy.shell.awk import check_awk
from plan_lsp.policy.shell.embedded import check_sed
from plan_lsp.policy.shell.lexer import LexError, lex

WS = Path(__file__).resolve().parent.parent
_SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

ALLOWED_FRAGMENTS = [
    "git log --oneline -n 5",
    "git status -sb",
    "git diff --stat",
    "git show HEAD --stat",
    "ls -la",
    "cat README.md",
    "head -n 5 README.md",
    "wc -l README.md",
    "grep -rn TODO plan_lsp",
    "rg -l classify plan_lsp",
    "find . -name '*.py' -type f",
    "sed -n '1,5p' README.md",
    "awk '{print $1}' README.md",
    "jq -r .name package.json",
    "sort README.md",
    "echo ok",
]
FORBIDDEN_FRAGMENTS = [
    "$(id)",
    "`id`",
    "$HOME",
    "${x}",
    "$((1+1))",
    "<(ls)",
    "> out.txt",
    ">> out.txt",
    "2> err.txt",
    "&> all.txt",
    "<<< $(id)",
    "{a,b}",
    "~/x",
    "--output=x",
    "--frobnicate",
    "-Z9",
    "&",
    "/etc/passwd",
    "../../outside",
]
JOINERS = [" ; ", " && ", " || ", " | ", "\n"]
# `echo` prints any word and `awk` reads any word after its program as a file name, so
# argument-level fragments are not forbidden there; shell-level ones are everywhere.
OPTION_TAKING = [f for f in ALLOWED_FRAGMENTS if not f.startswith(("echo", "awk"))]
SHELL_LEVEL = FORBIDDEN_FRAGMENTS[:13]


def _classify(cmd: str, protection: Protection = "classified") -> bool:
    return classify_command(cmd, protection=protection, roots=[WS], cwd=WS).allowed


def test_allowed_fragments_are_allowed() -> None:
    for fragment in ALLOWED_FRAGMENTS:
        assert _classify(fragment), fragment


@_SETTINGS
@given(
    parts=st.lists(st.sampled_from(ALLOWED_FRAGMENTS), min_size=1, max_size=4),
    joiners=st.lists(st.sampled_from(JOINERS), min_size=3, max_size=3),
)
def test_compositions_of_allowed_fragments_stay_allowed(
    parts: list[str], joiners: list[str]
) -> None:
    cmd = parts[0]
    for joiner, part in zip(joiners, parts[1:], strict=False):
        cmd += joiner + part
    assert _classify(cmd), cmd


# Argument-level fragments after commands that take options and paths; shell-level ones
# after any command.
_REFUSED_CASES = st.one_of(
    st.tuples(
        st.lists(st.sampled_from(OPTION_TAKING), min_size=1, max_size=3),
        st.sampled_from(FORBIDDEN_FRAGMENTS),
    ),
    st.tuples(
        st.lists(st.sampled_from(ALLOWED_FRAGMENTS), min_size=1, max_size=3),
        st.sampled_from(SHELL_LEVEL),
    ),
)


@_SETTINGS
@given(
    case=_REFUSED_CASES,
    where=st.integers(min_value=0, max_value=2),
    joiner=st.sampled_from(JOINERS),
)
def test_any_forbidden_fragment_refuses_under_classified(
    case: tuple[list[str], str], where: int, joiner: str
) -> None:
    parts, forbidden = case
    _assert_refused_with(parts, forbidden, where, joiner)


def _assert_refused_with(parts: list[str], forbidden: str, where: int, joiner: str) -> None:
    index = where % len(parts)
    parts = list(parts)
    parts[index] = f"{parts[index]} {forbidden}"
    cmd = joiner.join(parts)
    assert not _classify(cmd), cmd


@_SETTINGS
@given(text=st.text(max_size=80))
@example(text="²<")  # a digit to str.isdigit, not to int(): once a crash
@example(text="awk '²' f; sed '²p' f")
@example(text="{\U00109f4a")  # segfaulted tree-sitter-bash 0.25 (its issue #337)
def test_arbitrary_text_never_raises_and_is_deterministic(text: str) -> None:
    for protection in PROTECTIONS:
        first = classify_command(text, protection=protection, roots=[WS], cwd=WS)
        second = classify_command(text, protection=protection, roots=[WS], cwd=WS)
        assert first == second
        assert isinstance(first.allowed, bool) and first.reasons


_SHELLISH = st.lists(
    st.sampled_from([*"ab -_.=:/'\"\\$`(){}<>|;&*?[]~#!\n\t", "ls", "git", "$("]),
    max_size=40,
).map("".join)


@_SETTINGS
@given(text=_SHELLISH)
def test_shell_like_text_never_raises(text: str) -> None:
    for protection in PROTECTIONS:
        result = classify_command(text, protection=protection, roots=[WS], cwd=WS)
        assert isinstance(result.allowed, bool) and result.reasons


# -- the lexer reads words exactly as bash does -------------------------------------------

# No `/`: globs run in an empty directory, where (without a slash) they match nothing.
_WORDS = st.text(alphabet=st.sampled_from(list("ab1 -_.=:[]'\"\\*?{},~#!\t")), max_size=24)


@pytest.fixture(scope="module")
def empty_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("empty")


@pytest.mark.process
@_SETTINGS
@given(text=_WORDS)
def test_lexer_words_match_bash(text: str, empty_dir: Path) -> None:
    cmd = f"printf '%s\\0' {text}"
    try:
        commands = lex(cmd)
    except LexError:
        return
    if len(commands) != 1:
        return
    mine = [w.value for w in commands[0].words[2:]]
    proc = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", cmd],
        capture_output=True, cwd=empty_dir, timeout=10, check=False,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(empty_dir)},
    )  # fmt: skip
    assert proc.returncode == 0, (cmd, proc.stderr)
    theirs = proc.stdout.decode("utf-8", "surrogateescape").split("\0")[:-1]
    if not mine:
        assert theirs == [""]  # with no arguments, printf prints its format once
        return
    assert mine == theirs, cmd


# -- sed and awk programs the grammars accept cannot write or run anything -------------------

_SED_PIECES = [
    "p", "d", "q", "=", "1", "2", "$", ",", "!", ";", " ", "\n", "/a/", "/[/]/", "s/a/b/",
    "s/a/b/g", "s|a|b|", "y/ab/ba/", "w x", "e id", "r /etc/hosts", "s/a/b/w x", "s/a/id/e",
    "[", "]", "\\", "/", "~2", "+1", "{", "}", "#", "a x", "i\\", "M", "I", "0",
]  # fmt: skip
_AWK_PIECES = [
    "{", "}", "print", "printf", " ", "$1", "$NF", "NR", ">", ">>", "|", "\"x\"", "\"sh\"",
    ",", ";", "\n", "/a/", "/[/]/", "system(\"id\")", "getline", "<", "(", ")", "x", "=", "+",
    "-", "*", "%", "&&", "||", "!", "BEGIN", "END", "ENVIRON", "ARGV[1]", "close(\"x\")",
    "==", "~", "length", "substr($0,1,2)", "next", "exit", "@include", "#",
]  # fmt: skip


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sample") / "input.txt"
    path.write_text("a b c\n[/] a\nx y z\n")
    return path


def _run_in_empty_dir(argv: list[str], where: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        argv, capture_output=True, cwd=where, timeout=10, check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": str(where)},
    )  # fmt: skip


@pytest.mark.process
@_SETTINGS
@given(pieces=st.lists(st.sampled_from(_SED_PIECES), max_size=8))
def test_accepted_sed_programs_write_and_run_nothing(
    pieces: list[str], sample: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    script = "".join(pieces)
    if check_sed(script) is not None:
        return
    where = tmp_path_factory.mktemp("sed")
    # --sandbox makes GNU sed reject e, w and r: an accepted program must never hit that.
    boxed = _run_in_empty_dir(["sed", "--sandbox", "-n", "-e", script, str(sample)], where)
    assert b"sandbox mode" not in boxed.stderr, script
    _run_in_empty_dir(["sed", "-n", "-e", script, str(sample)], where)
    assert list(where.iterdir()) == [], script


@pytest.mark.process
@_SETTINGS
@given(pieces=st.lists(st.sampled_from(_AWK_PIECES), max_size=10))
def test_accepted_awk_programs_write_and_run_nothing(
    pieces: list[str], sample: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    program = "".join(pieces)
    if check_awk(program) is not None:
        return
    names = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", program))
    assert not names & {"system", "getline", "ENVIRON", "ARGV", "close"}, program
    where = tmp_path_factory.mktemp("awk")
    _run_in_empty_dir(["awk", program, str(sample)], where)
    assert list(where.iterdir()) == [], program
