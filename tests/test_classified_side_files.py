"""Files an allow-listed program opens that its command line does not name, under
`classified` (no sandbox): temporary files stay in the command's private home; the ignore
files rg and fd read above the workspace make them refused; a date string naming a time zone
file is refused. Table and property tests of the classifier, and the temporary files traced.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plan_lsp.policy.shell import classify_command
from plan_lsp.policy.shell.verify import PARENT_IGNORE_FILES
from tests.needs import need_program


def _allowed(command: str, ws: Path) -> tuple[bool, list[str]]:
    result = classify_command(command, roots=[ws], cwd=ws)
    return result.allowed, list(result.reasons)


@pytest.mark.parametrize("name", PARENT_IGNORE_FILES)
@pytest.mark.parametrize("command", ["rg hello", "rg -n hello .", "fd f", "fdfind -e py"])
def test_walkers_are_refused_below_an_ignore_file_outside(
    name: str, command: str, tmp_path: Path
) -> None:
    ws = tmp_path / "above" / "ws"
    ws.mkdir(parents=True)
    assert _allowed(command, ws)[0], command
    (tmp_path / name).mkdir() if name == ".git" else (tmp_path / name).write_text("a{b\n")
    allowed, reasons = _allowed(command, ws)
    assert not allowed
    assert any(str(tmp_path / name) in r and "lies above the workspace" in r for r in reasons)


def test_ignore_files_inside_the_workspace_are_its_own(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    for name in PARENT_IGNORE_FILES:
        (ws / "sub" / name).write_text("a{b\n")
    assert _allowed("rg hello", ws)[0]
    assert _allowed("rg hello sub", ws)[0]


@pytest.mark.parametrize(
    ("command", "allowed"),
    [
        ("date -d yesterday +%F", True),
        ("date -u --date='2024-01-01 10:00' +%s", True),
        ("date -d 'TZ=\"/etc/shadow\" now'", False),
        ("date -d'TZ=\"../x\" now'", False),
        ("date --date='tz=\"x\" now'", False),
        ("date --date 'TZ=\"Europe/Paris\" 2024-01-01'", False),
    ],
)
def test_date_strings_naming_a_zone_file(command: str, allowed: bool, tmp_path: Path) -> None:
    verdict, reasons = _allowed(command, tmp_path)
    assert verdict is allowed, reasons
    if not allowed:
        assert any("time zone" in r for r in reasons), reasons


@given(
    before=st.text(alphabet="abc 0123:-", max_size=8),
    tz=st.sampled_from(["TZ=", "tz=", "Tz=", "tZ="]),
    after=st.text(alphabet='abc/. "', max_size=12),
)
def test_any_date_string_with_a_zone_is_refused(before: str, tz: str, after: str) -> None:
    from plan_lsp.policy.shell.valuecheck import check_value

    assert check_value("date_string", before + tz + after) is not None


@pytest.mark.process
@pytest.mark.parametrize(
    "command",
    ["seq 1 300000 | sort -S 1 | tail -1", "cat big.txt | tac | head -1",
     "seq 1 300000 | timeout -s KILL 0.3 sort -S 1"],
)  # fmt: skip
def test_temporary_files_stay_in_the_private_home(command: str, tmp_path: Path) -> None:
    from plan_lsp.policy.sandbox import unsandboxed_plan_env

    strace = need_program("strace")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "big.txt").write_text("".join(f"{n}\n" for n in range(50_000)))
    assert _allowed(command, ws)[0], command
    home = tmp_path / "private"
    home.mkdir(mode=0o700)
    trace = tmp_path / "trace"
    env = unsandboxed_plan_env(home, {**os.environ, "TMPDIR": "/tmp"})
    subprocess.run(
        [strace, "-f", "-qq", "-e", "trace=openat,open,creat", "-o", str(trace), "bash", "-c",
         command],
        cwd=ws, env=env, capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    created = [
        line for line in trace.read_text().splitlines()
        if "O_CREAT" in line and f'"{home}/' not in line and '"/dev/null"' not in line
    ]  # fmt: skip
    assert created == [], created[:3]


@pytest.mark.parametrize(
    ("command", "allowed"),
    [
        # pip runs git in each editable install's folder, which its metadata names.
        ("pip freeze", False),
        ("pip freeze --path site", False),
        ("pip freeze --all --exclude-editable", True),
        ("pip freeze --exclude-editable --path site", True),
        # A file name git opens in every folder it walks.
        ("git ls-files -o -i --exclude-per-directory=../.netrc", False),
        ("git ls-files -o -i --exclude-per-directory /home/u/.netrc", False),
        ("git ls-files -o -i --exclude-per-directory=..", False),
        ("git ls-files -o -i --exclude-per-directory=.gitignore", True),
        # The resolver may query a DNS server.
        ("hostname -A", False),
        ("hostname --fqdn", False),
        ("hostname -i", False),
        ("hostname", True),
        ("hostname -s", True),
    ],
)
def test_programs_that_follow_names_they_were_not_given(
    command: str, allowed: bool, tmp_path: Path
) -> None:
    (tmp_path / "site").mkdir()
    verdict, reasons = _allowed(command, tmp_path)
    assert verdict is allowed, reasons


# `--name[=VALUE]` in a GNU program's --help: the value only attached.
_OPTIONAL_VALUE = re.compile(r"(?<![\w-])(--[A-Za-z0-9][\w-]*)\[=")


@pytest.mark.process
def test_no_option_whose_value_is_optional_takes_the_next_word() -> None:
    """An option whose value the program takes only attached (`--occurrence[=N]`) must not
    be listed as taking the next word: that word is the program's next option, unseen by the
    classifier (`tar --occurrence --checkpoint-action=exec=…` ran a command). Checked against
    the --help of every installed program that prints one."""
    from plan_lsp.policy.shell.database import database

    checked, wrong = 0, []
    for name, prog in database().programs.items():
        real = shutil.which(name)
        if prog.alias_of is not None or real is None:
            continue
        try:
            done = subprocess.run([real, "--help"], capture_output=True, text=True,
                                  timeout=10, stdin=subprocess.DEVNULL, check=False)  # fmt: skip
        except (OSError, subprocess.SubprocessError):
            continue
        optional = set(_OPTIONAL_VALUE.findall(done.stdout + done.stderr))
        takes_next = {f for f, arity, _ in prog.entries() if arity in ("required", "pair")}
        checked += bool(optional)
        wrong += [f"{name} {f}" for f in sorted(optional & takes_next)]
    assert checked >= 10
    assert wrong == []
