"""The program database (`programs.toml`): every entry well formed, and the two checkers that
read it (`classified`: argcheck.py, `sandboxed`: argv.py) refuse what it does not declare,
naming the token."""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from plan_lsp.policy.shell import classify_command
from plan_lsp.policy.shell.database import (
    ROLE_NAMES,
    Database,
    Program,
    database,
    load_database,
)
from plan_lsp.policy.shell.model import (
    CAPABILITIES,
    PLAN_ALLOWED_CAPABILITIES,
    SANDBOX_REFUSED,
)
from plan_lsp.policy.shell.valuecheck import CHECKS
from plan_lsp.policy.shell.verify import VERIFIERS

_SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
_RAW = resources.files("plan_lsp.policy.shell").joinpath("programs.toml").read_text("utf-8")
_MINIMAL = ""


@pytest.fixture(scope="module")
def db() -> Database:
    return database()


def _entries(db: Database) -> list[Program]:
    out: list[Program] = []
    stack = list(db.programs.values())
    while stack:
        prog = stack.pop()
        out.append(prog)
        stack.extend(prog.subcommands.values())
    return out


def _strict(cmd: str, ws: Path) -> tuple[bool, list[str]]:
    result = classify_command(cmd, protection="classified", roots=[ws], cwd=ws)
    return result.allowed, result.reasons


def _sandboxed(cmd: str) -> tuple[bool, list[str]]:
    result = classify_command(cmd, protection="sandboxed")
    return result.allowed, result.reasons


# -- the data ---------------------------------------------------------------------------------


def test_the_database_loads_once_and_every_entry_is_well_formed(db: Database) -> None:
    assert database() is db
    raw = tomllib.loads(_RAW)
    assert set(raw) == {"harmless_paths", "workspace_selected_shims", "option_sets", "programs"}
    assert set(raw["programs"]) == set(db.programs)
    entries = _entries(db)
    assert len(entries) > 300
    for prog in entries:
        label = prog.label
        assert prog.caps <= CAPABILITIES, label
        for name, option in prog.options.items():
            assert name.startswith("-"), (label, name)
            if option.check is not None:
                assert option.check in CHECKS, (label, name, option.check)
        for role in prog.roles:
            assert role.name in ROLE_NAMES, (label, role)
            if role.name == "command":
                assert role is prog.roles[-1], label
        if prog.verify is not None:
            assert prog.verify in VERIFIERS, label
        listed = set(prog.options)
        for group in (prog.operands_need, prog.drops_first, prog.requires):
            # Options named by a rule are options the entry (or its parent) accepts.
            assert group <= listed | _parent_options(db, label), (label, sorted(group - listed))
        for name, effect in prog.effects.items():
            assert effect.caps <= CAPABILITIES and effect.drop <= prog.caps | effect.drop, label
            if name in listed:
                # An accepted option may only take capabilities away.
                assert effect.caps <= PLAN_ALLOWED_CAPABILITIES, (label, name)
            for value in effect.ok_values:
                assert effect.value, (label, name, value)
        for other in prog.runs:
            assert other and "/" not in other and " " not in other, (label, other)
        if prog.read_only and not prog.sub_required:
            # What `classified` accepts of it reads only, once its required options are given.
            needs = prog.caps - prog.drops(set(prog.requires)) if prog.requires else prog.caps
            assert needs <= PLAN_ALLOWED_CAPABILITIES, (label, sorted(needs))
    for name in db.programs:
        assert name == name.strip() and " " not in name


def _parent_options(db: Database, label: str) -> set[str]:
    words = label.split(" ")
    prog = db.programs[words[0]]
    seen = set(prog.options)
    for word in words[1:-1]:
        prog = prog.subcommands[word]
        seen |= set(prog.options)
    return seen if len(words) > 1 else set()


def test_the_vocabulary_is_closed() -> None:
    """A misspelt key, capability, role, option set or alias is an error at load time."""
    bad = {
        "misspelt key": '[programs.x]\nwhy = "x"\nflgs = ["-a"]\n',
        "unknown capability": '[programs.x]\ncaps = ["write:everything"]\n',
        "unknown role": '[programs.x]\noperands = ["files*"]\n',
        "bad option name": '[programs.x]\nflags = ["a"]\n',
        "unknown option set": '[programs.x]\ninclude = ["nothing"]\n',
        "alias of nothing": '[programs.x]\nalias_of = "y"\n',
        "check of an unlisted option": '[programs.x]\nchecks = { "-n" = "int" }\n',
        "an accepted option that writes": (
            '[programs.x]\nflags = ["-o"]\n[programs.x.effects]\n'
            '"-o" = { caps = ["write:filesystem"], why = "write" }\n'
        ),
        "effect key misspelt": '[programs.x.effects]\n"-o" = { cap = ["write:filesystem"] }\n',
        "a computed field as data": '[programs.x]\nread_only = true\nlabel = "ls"\n',
    }
    for case, text in bad.items():
        with pytest.raises((ValidationError, ValueError)):
            load_database(_MINIMAL + text)
        assert case
    good = load_database(_MINIMAL + '[programs.x]\nread_only = true\nwhy = "x"\n')
    assert good.programs["x"].read_only


# -- the checkers: tables -----------------------------------------------------------------------

# (command, allowed under classified, a fragment every refusal's reasons contain)
CLASSIFIED_TABLE = [
    ("ls -la src", True, ""),
    ("head -n 5 a.txt", True, ""),
    ("head -n5 a.txt", True, ""),
    ("gzip -c a.txt", True, ""),
    ("gzip a.txt", False, "allowed only with"),
    ("gzip --help", False, "allowed only with"),
    ("tar -tf a.tar", True, ""),
    ("tar -xf a.tar", False, "`-x`"),
    ("git log --oneline -n 3", True, ""),
    ("git commit -m x", False, "`git commit`"),
    ("git -c core.pager=x log", False, "`-c`"),
    ("git log --outp=x", False, "`--outp`"),
    ("sort -o out.txt a.txt", False, "`-o`"),
    ("rm a.txt", False, "`rm`"),
    ("curl http://example.com", False, "`curl`"),
    ("dir", False, "`dir`"),
    ("frobnicate", False, "`frobnicate`"),
    ("xxd a.txt b.txt", False, "`b.txt`"),
    ("command -v ls", True, ""),
    ("command -p ls", False, "`-p`"),
    # bash stops reading `command`'s options at the name: this runs `rm -v a.txt`.
    ("command rm -v a.txt", False, "`rm`"),
    ("command ls -V", False, "`ls`"),
]

# (command, allowed under sandboxed, a fragment every refusal's reasons contain)
SANDBOXED_TABLE = [
    ("ls -la", True, ""),
    ("frobnicate --anything", True, ""),
    ("gzip a.txt", False, "`gzip`"),
    ("gzip -c a.txt", True, ""),
    ("tar -xf a.tar", False, "`-x`"),
    ("tar -tf a.tar", True, ""),
    ("sort -o out.txt a.txt", False, "`-o`"),
    ("sort --outp=out.txt a.txt", False, "`--outp"),
    ("find . -delete", False, "`-delete`"),
    ("git commit -m x", False, "`git commit`"),
    ("git -c core.pager=x log", True, ""),
    ("uniq a.txt b.txt", False, "`b.txt`"),
    ("tree -o /dev/null", True, ""),
    ("tree -o out.html", False, "`-o out.html`"),
    ("timeout 5 rm x", False, "`rm`"),
    ("command -p rm x", False, "`rm`"),
    ("curl -o /dev/null http://example.com", False, "network"),
    # Where the program stops reading options, so does the walk (`permute = false`).
    ("xxd a.txt -b", False, "`-b`"),
    ("unzip a.zip -l", False, "`unzip`"),
    ("unzip -l a.zip", True, ""),
    # An option whose value must be attached does not take the next word.
    ("git branch --abbrev v", False, "`v`"),
    ("git branch --abbrev=7", True, ""),
]


@pytest.mark.parametrize(("cmd", "allowed", "fragment"), CLASSIFIED_TABLE)
def test_classified_table(tmp_path: Path, cmd: str, allowed: bool, fragment: str) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "b.txt").write_text("b\n")
    ok, reasons = _strict(cmd, tmp_path)
    assert ok is allowed, (cmd, reasons)
    if not allowed:
        assert any(fragment in r for r in reasons), (cmd, reasons)


@pytest.mark.parametrize(("cmd", "allowed", "fragment"), SANDBOXED_TABLE)
def test_sandboxed_table(cmd: str, allowed: bool, fragment: str) -> None:
    ok, reasons = _sandboxed(cmd)
    assert ok is allowed, (cmd, reasons)
    if not allowed:
        assert any(fragment in r for r in reasons), (cmd, reasons)


def test_every_effect_that_changes_things_is_refused_naming_the_option(db: Database) -> None:
    """Every option the database says writes (or uses the network) refuses the command at
    both levels, and the `sandboxed` reason names it."""
    checked = 0
    for prog in _entries(db):
        if prog.anything or prog.wrapper is not None or prog.subcommands:
            continue
        for name, effect in prog.effects.items():
            if not effect.caps & SANDBOX_REFUSED or prog.label.startswith("find"):
                continue
            words = [prog.label, name] + (["value-not-ok"] if effect.value else [])
            if prog.script is not None:
                words.append("p")
            cmd = " ".join(words)
            ok, reasons = _sandboxed(cmd)
            assert not ok, (cmd, reasons)
            assert any(f"`{name}" in r for r in reasons), (cmd, reasons)
            assert not classify_command(cmd, protection="classified").allowed, cmd
            checked += 1
    assert checked > 50


# -- the checkers: properties -------------------------------------------------------------------

_NAMES = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_", min_size=2, max_size=12)


@_SETTINGS
@given(name=_NAMES)
def test_a_program_not_in_the_database_is_refused_naming_it(tmp_path: Path, name: str) -> None:
    prog = database().programs.get(name)
    if (prog is not None and prog.read_only) or name == "cd":  # `cd`: strict.py's own rules
        return
    ok, reasons = _strict(f"{name} a.txt", tmp_path)
    assert not ok
    # `name` alone, or the command it starts (`unset a.txt`: bash's own syntax).
    assert any(f"`{name}`" in r or f"`{name} a.txt`" in r for r in reasons), reasons


def _plain_read_only() -> list[str]:
    return sorted(
        name
        for name, prog in database().programs.items()
        if prog.read_only and not (prog.raw or prog.exact_only or prog.old_style)
    )


@_SETTINGS
@given(
    program=st.sampled_from(_plain_read_only()),
    flag=st.one_of(
        st.text(alphabet="abcdefghijklmnopqrstuvwxyz-", min_size=2, max_size=14).map(
            lambda s: "--" + s.strip("-") if s.strip("-") else "--zz"
        ),
        st.sampled_from("ABDEFGJKMOQUWXYZ").map(lambda c: "-" + c),
    ),
)
def test_any_option_not_declared_for_a_program_is_refused_naming_it(
    tmp_path: Path, program: str, flag: str
) -> None:
    prog = database().programs[program]
    if flag in prog.options or (prog.numeric and flag[1:].isdigit()):
        return
    ok, reasons = _strict(f"{program} {flag}", tmp_path)
    assert not ok, (program, flag, reasons)
    name = flag.partition("=")[0]
    assert any(f"`{name}`" in r for r in reasons), (program, flag, reasons)


def test_examples_are_checked_when_the_classifier_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    """An example the rules refuse, or a not-example they accept, stops the load, naming
    both; the next classification tries the load again."""
    import plan_lsp.policy.shell.classifier as classifier
    import plan_lsp.policy.shell.database as data

    monkeypatch.setattr(data, "examples", lambda _: [("rm -rf src", True), ("ls -la", False)])
    monkeypatch.setattr(classifier, "_loaded", None)
    with pytest.raises(ValueError, match=r"'rm -rf src' is refused: .*`rm`.*'ls -la' is accepted"):
        classify_command("ls")
    assert classifier._loaded is None


def test_every_entry_with_derived_names_or_refused_characters_refuses_them(
    tmp_path: Path,
) -> None:
    """`zcat -f notes` where `notes.gz` links out, xmllint's `%`-escapes: refused, named."""
    (tmp_path / "ws").mkdir()
    ws = tmp_path / "ws"
    (tmp_path / "secret").write_text("x")
    for suffix in (".gz", ".z", "-z", ".Z"):
        (ws / f"n{suffix}").symlink_to(tmp_path / "secret")
        for cmd in ("zcat -f n", "gzip -dc n", "gunzip -c n", "zgrep x n"):
            allowed, reasons = _strict(cmd, ws)
            assert not allowed and f"`n{suffix}` when `n` is missing" in reasons[-1], reasons
        (ws / f"n{suffix}").unlink()
    assert _strict("zcat -f n", ws)[0]
    allowed, reasons = _strict("xmllint --noout %2E%2E/secret", ws)
    assert not allowed and "contains `%`" in reasons[-1]
