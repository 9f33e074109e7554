"""Table tests over the shell corpus, targeted reasons, and property tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plan_lsp.policy.shell import (
    CAPABILITIES,
    PLAN_ALLOWED_CAPABILITIES,
    Classification,
    classify_command,
)
from plan_lsp.policy.shell.profiles import profiles

CORPUS = Path(__file__).parent / "shell_corpus"


def _lines(name: str) -> list[str]:
    text = (CORPUS / name).read_text("utf-8")
    return [line for line in text.splitlines() if line.strip() and not line.startswith("#")]


ALLOWED = _lines("allowed.txt")
BLOCKED = _lines("blocked.txt")


def test_corpus_sizes() -> None:
    assert len(ALLOWED) >= 200
    assert len(BLOCKED) >= 300


@pytest.mark.parametrize("cmd", ALLOWED)
def test_allowed_corpus(cmd: str) -> None:
    result = classify_command(cmd)
    assert result.allowed, (cmd, result.reasons)
    assert result.capabilities <= PLAN_ALLOWED_CAPABILITIES
    assert result.reasons


@pytest.mark.parametrize("cmd", BLOCKED)
def test_blocked_corpus(cmd: str) -> None:
    result = classify_command(cmd)
    assert not result.allowed, (cmd, result.capabilities, result.reasons)
    assert result.reasons


@pytest.mark.parametrize(
    ("cmd", "token", "cap"),
    [
        ("find . -delete", "`-delete`", "write:filesystem"),
        ("find . -exec rm {} \\;", "`-exec`", "execute:subprocess"),
        ("sed -i s/a/b/ f", "`-i`", "write:filesystem"),
        ("sort --out=x in", "`--out` (short for `--output`)", "write:filesystem"),
        ("curl -X POST https://x", "`-X POST`", "write:network"),
        ("curl -o page.html https://x", "`-o page.html`", "write:filesystem"),
        ("git -c core.pager=sh log", "`-c`", "execute:subprocess"),
        ("git diff --ext-diff", "`--ext-diff`", "execute:subprocess"),
        ("echo hi > out.txt", "`> out.txt`", "write:filesystem"),
        ("FOO=1 ls", "`FOO=1`", "modify:environment"),
        ("git branch topic", "`topic`", "write:git"),
        ("rm -rf build", "`rm`", "write:filesystem"),
        ("ls &", "`&`", "write:process"),
    ],
)
def test_reason_names_token_and_capability(cmd: str, token: str, cap: str) -> None:
    result = classify_command(cmd)
    assert not result.allowed
    assert cap in result.capabilities
    assert any(token in r and cap in r for r in result.reasons), result.reasons


@pytest.mark.parametrize(
    ("cmd", "fragment"),
    [
        ("./ls", "by path"),
        ("frobnicate --now", "not a command this checker knows"),
        ("ls 'open", "does not parse"),
        ("$CMD x", "only known at run time"),
        ("find * -name x", "could turn into a flag"),
        ("ls\x1b", "control character"),
        ("", "empty"),
    ],
)
def test_hard_denials_explain_themselves(cmd: str, fragment: str) -> None:
    result = classify_command(cmd)
    assert not result.allowed
    assert any(fragment in r for r in result.reasons), result.reasons


@pytest.mark.parametrize(
    "cmd",
    [
        "find . -\\\ndelete",  # bash joins the lines into `-delete`
        "ls # note\\\nrm y",  # a comment does not continue: `rm y` runs
        "echo 'a\\\nb'",  # inside single quotes the pair is literal: ambiguous
        "cat <<EOF\n$(rm x)\nEOF",
        "cat <<'EOF' > out\nhi\nEOF",
        "ls\nrm x",
        "cat <<EOF | sh\nls\nEOF",
    ],
)
def test_multiline_escapes_are_blocked(cmd: str) -> None:
    assert not classify_command(cmd).allowed


@pytest.mark.parametrize(
    "cmd",
    ["git log \\\n  --oneline \\\n  -n 5", "ls\npwd", "cat <<EOF\nplain text\nEOF"],
)
def test_multiline_reads_are_allowed(cmd: str) -> None:
    result = classify_command(cmd)
    assert result.allowed, result.reasons


def test_custom_allowed_set() -> None:
    everything = frozenset(CAPABILITIES)
    assert classify_command("rm x", everything).allowed
    # Still denied: not understood, whatever the allowed set.
    assert not classify_command("./rm x", everything).allowed
    assert not classify_command("git log", frozenset()).allowed


def test_result_shape() -> None:
    result = classify_command("git log -1")
    assert isinstance(result, Classification)
    assert result.to_json("git log -1") == {
        "cmd": "git log -1",
        "allowed": True,
        "capabilities": ["read:git"],
        "reasons": result.reasons,
    }


def test_profiles_are_data_and_valid() -> None:
    table = profiles()
    assert {"ls", "git", "find", "curl", "sort"} <= set(table)
    for name, prof in table.items():
        assert prof.caps <= CAPABILITIES, name


def test_importing_the_package_does_not_load_tree_sitter() -> None:
    code = (
        "import sys, plan_lsp.policy.shell, plan_lsp.tools.bash;"
        "assert 'tree_sitter' not in sys.modules, 'loaded';"
        "plan_lsp.policy.shell.classify_command('ls');"
        "assert 'tree_sitter' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# Properties ----------------------------------------------------------------------------
_TARGETS = st.text(
    alphabet=st.sampled_from("abcxyz/._-0123456789"), min_size=1, max_size=12
).filter(lambda t: t != "/dev/null" and not t.isdigit() and t != "-")


@settings(max_examples=150, deadline=None)
@given(
    cmd=st.sampled_from(ALLOWED),
    op=st.sampled_from([">", ">>", ">|", "&>", "2>", "1>"]),
    target=_TARGETS,
)
def test_output_redirection_to_a_file_is_never_allowed(cmd: str, op: str, target: str) -> None:
    result = classify_command(f"{cmd} {op} {target}")
    assert not result.allowed, (cmd, op, target)


@settings(max_examples=150, deadline=None)
@given(
    cmd=st.sampled_from(ALLOWED),
    tail=st.sampled_from(["; rm x", "&& rm -rf x", "|| touch x", "| sh", "; git commit -am x"]),
)
def test_appending_a_writer_blocks_any_allowed_command(cmd: str, tail: str) -> None:
    result = classify_command(
        f"{cmd}\n{tail.lstrip(';&|')}" if tail.startswith(";") else f"{cmd} {tail}"
    )
    assert not result.allowed, (cmd, tail)


@settings(max_examples=100, deadline=None)
@given(cmd=st.sampled_from(ALLOWED))
def test_wrapping_an_allowed_command_in_a_substitution_keeps_it_allowed(cmd: str) -> None:
    if "\n" in cmd or "<<" in cmd:
        return
    result = classify_command(f'echo "$( {cmd})"')  # a space: `$((` would be arithmetic
    assert result.allowed, (cmd, result.reasons)


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=60))
def test_arbitrary_text_never_crashes(text: str) -> None:
    result = classify_command(text)
    assert isinstance(result.allowed, bool)
    if result.allowed:
        assert result.capabilities <= PLAN_ALLOWED_CAPABILITIES
