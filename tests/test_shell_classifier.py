"""The shell classifier's two rule sets: table tests with the reason naming the token."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from plan_lsp.policy.shell import (
    CAPABILITIES,
    PLAN_ALLOWED_CAPABILITIES,
    PROTECTIONS,
    Classification,
    Protection,
    classify_command,
)
from plan_lsp.policy.shell.database import database


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace with files, a symlink out of it, and an outside secret."""
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print(1)\n")
    (root / "src" / "util.py").write_text("x = 1\n")
    (root / "README.md").write_text("# readme\n")
    (root / "data.json").write_text('{"a": 1}\n')
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("token\n")
    (root / "link").symlink_to(outside)
    return root


def strict(cmd: str, ws: Path, network: bool = False) -> Classification:
    return classify_command(cmd, protection="classified", roots=[ws], cwd=ws, network=network)


def boxed(cmd: str, network: bool = False) -> Classification:
    return classify_command(cmd, protection="sandboxed", network=network)


# -- classified: the allow-list -----------------------------------------------------------

STRICT_ALLOWED = [
    "git status",
    "git status -sb",
    "git log --oneline -n 20",
    "git log -5 --stat",
    "git log --format='%h %an %s' -n 10",
    "git log --since='2 weeks ago' --author=alice",
    "git log -p -3 -- src/app.py",
    "git -C src log --oneline -3",
    "git --no-pager log -1",
    "git show HEAD~2 --stat",
    "git show HEAD:README.md",
    "git diff --cached --stat",
    "git diff HEAD~1 HEAD -- src/",
    "git diff --no-ext-diff --no-textconv",
    "git blame -L 1,40 src/app.py",
    "git grep -n TODO -- '*.py'",
    "git branch -a",
    "git branch --list 'feature/*'",
    "git tag -l 'v1.*'",
    "git rev-parse --abbrev-ref HEAD",
    "git stash list",
    "git remote -v",
    "git ls-files --others --exclude-standard",
    "git --version",
    "ls -la src",
    "ls src/*.py",
    "cat README.md src/app.py",
    "head -n 20 README.md",
    "head -5 src/app.py",
    "tail -n 30 README.md",
    "wc -l src/*.py",
    "grep -rn TODO src/",
    "grep -e foo -e bar -r .",
    "rg -n 'def main' src",
    "rg --files | head",
    "find . -name '*.py' -not -path './node_modules/*'",
    "find src -maxdepth 2 -type d",
    "jq -r '.a' data.json",
    "jq --arg v 1 '.a == $v' data.json",
    "tree -L 2",
    "sed -n '1,20p' src/app.py",
    "sed 's/foo/bar/g' README.md",
    "awk '{print $1}' README.md",
    "awk -F: 'NR>1 && $3 > 100 {print $1, $3}' README.md",
    "awk '{s += $1} END {print s}' README.md",
    "sort README.md | uniq -c | sort -rn | head",
    "stat README.md",
    "file src/app.py",
    "du -sh .",
    "pip list --disable-pip-version-check",
    "pip show pydantic",
    "python3 --version",
    "cat /etc/os-release",
    "git log --oneline 2>/dev/null | head -5",
    "ls > /dev/null 2>&1",
    "cat < README.md",
    "timeout 10 git status",
    "date +%Y-%m-%d",
    "echo done",
    "git log \\\n  --oneline \\\n  -n 5",
    "ls  # a comment",
    "ls\npwd",
]


@pytest.mark.parametrize("cmd", STRICT_ALLOWED)
def test_classified_allows_what_it_fully_understands(cmd: str, ws: Path) -> None:
    result = strict(cmd, ws)
    assert result.allowed, (cmd, result.reasons)
    assert result.capabilities <= PLAN_ALLOWED_CAPABILITIES
    assert result.reasons


STRICT_REFUSED = [
    # unknown programs, subcommands and options, named
    ("frobnicate --now", "`frobnicate`"),
    ("rm -rf build", "`rm`"),
    ("git commit -am x", "`git commit`"),
    ("git log --output=x", "`--output`"),
    ("git diff --ext-diff", "`--ext-diff`"),
    ("git log -p --textconv", "`--textconv`"),
    ("git -c core.pager=sh log", "`-c`"),
    ("git --git-dir=/tmp/x log", "`--git-dir`"),
    ("git --work-tree=. status", "`--work-tree`"),
    ("git --exec-path=. log", "`--exec-path`"),
    ("git --config-env=core.pager=X log", "`--config-env`"),
    ("git --namespace=x log", "`--namespace`"),
    ("git -p log", "`-p`"),
    ("git --paginate log", "`--paginate`"),
    ("git grep -O foo", "`-O`"),
    ("git grep --open-files-in-pager foo", "`--open-files-in-pager`"),
    ("git branch topic", "`topic`"),
    ("git branch -D topic", "`-D`"),
    ("git tag v9", "`v9`"),
    ("git stash", "needs one of its listed subcommands"),
    ("git remote add x y", "`git remote add`"),
    ("git describe --dirty", "`--dirty`"),
    ("git log --pretty=mine", "pretty format"),
    ("git log --format='%G?'", "signature"),
    ("rg --pre ./x foo", "`--pre`"),
    ("rg -z foo", "`-z`"),
    ("rg -L foo", "`-L`"),
    ("grep -R foo .", "`-R`"),
    ("find . -delete", "`-delete`"),
    ("find . -exec rm {} ;", "`-exec`"),
    ("find . -fprint out", "`-fprint`"),
    ("find -L . -name x", "`-L`"),
    ("sort -o out README.md", "`-o`"),
    ("sort --compress-program=sh README.md", "`--compress-program`"),
    ("uniq README.md out", "`out`"),
    ("tail -f README.md", "`-f`"),
    ("sed -i s/a/b/ README.md", "`-i`"),
    ("sed -f prog README.md", "`-f`"),
    ("python3 script.py", "`python3`"),
    ("python", "allowed only as"),
    ("npm ls", "allowed only as"),
    ("date 010101", "clock"),
    ("hostname evil", "`evil`"),
    # abbreviations of long options are never expanded
    ("git status --shor", "`--shor`"),
    ("sed --expr=p README.md", "`--expr`"),
    ("grep --colo=always x README.md", "`--colo`"),
    ("pip list --form=json", "`--form`"),
    ("ls --al", "`--al`"),
    # flags with an optional value never take the next word
    ("git log --stat --output=x", "`--output`"),
    ("git diff -U --output=x", "`--output`"),
    # expansions and other shell constructs
    ("ls $HOME", "expansion"),
    ("echo `id`", "backquotes"),
    ('cat "$(id)"', "command substitution"),
    ("ls {a,b}", "brace expansion"),
    ("cat ~/.ssh/id_rsa", "`~`"),
    ("ls x=~/y", "`~`"),
    ("FOO=1 ls", "`FOO=1`"),
    ("ls &", "`&`"),
    ("(ls; rm x)", "`rm`"),
    ("for f in a; do rm $f; done", "`rm`"),
    ("for PATH in /tmp; do ls; done", "`PATH`"),
    ("for f in a; do ls; done &", "`&`"),
    ("for ((i = 0; i < 3; i++)); do ls; done", "`(`"),
    ("select x in a; do ls; done", "`select`"),
    ("[[ -v x ]]", "`[[ ]]`"),
    ("test -v 'a[$(id)]'", "`test`"),
    ("[ -v 'a[$(id)]' ]", "`test`"),
    ("cat <<EOF\n$(id)\nEOF", "here-document"),
    ("grep x <<< $(id)", "here-string"),
    ("cat <<'EOF' | tee out\nx\nEOF", "`tee`"),
    ("while true; do cd src; done", "`while`"),
    ("cd .. && ls", "`cd ..`"),
    ("cd && ls", "`cd`"),
    ("cd - && ls", "`cd -`"),
    ("diff <(ls) <(ls)", "process substitution"),
    ("ls [ab]", "`[`"),
    ("xargs rm", "`xargs`"),
    ("sh -c ls", "`sh`"),
    ("bash -c 'ls'", "`bash`"),
    ("env ls", "`env`"),
    ("timeout 5 rm x", "`rm`"),
    ("nice sh -c ls", "`sh`"),
    # redirections
    ("ls > out.txt", "`> out.txt`"),
    ("ls >> /dev/null2", "`>> /dev/null2`"),
    ("ls 2> err.txt", "`2> err.txt`"),
    ("ls &> all.txt", "`&> all.txt`"),
    ("ls >| x", "noclobber"),
    ("cat <> f", "reading and writing"),
    ("echo x > /dev/tcp/127.0.0.1/80", "network"),
    ("cat < /dev/tcp/127.0.0.1/80", "network"),
    ("ls >&3", "`>&3`"),
    # reads outside the workspace
    ("cat /etc/passwd", "outside the workspace"),
    ("cat ../x", "outside the workspace"),
    ("cat link/secret", "outside the workspace"),
    ("grep -r token link/", "outside the workspace"),
    ("git diff /etc/hostname README.md", "outside the workspace"),
    ("git -C / log", "outside the workspace"),
    ("grep -f /etc/shadow x README.md", "outside the workspace"),
    ("cat < /proc/self/environ", "outside the workspace"),
    ("diff src README.md", "directory"),
    # embedded programs
    ("awk '{system(\"id\")}' README.md", "`system`"),
    ("awk '{print > \"x\"}' README.md", "stdout"),
    ("awk '{print | \"sh\"}' README.md", "stdout"),
    ("awk 'BEGIN {while (1) x++}'", "`while`"),
    ("awk '{getline x < \"/etc/passwd\"}' README.md", "`getline`"),
    ("awk 'BEGIN {ARGV[1] = \"/etc/passwd\"}'", "`ARGV`"),
    ("sed 's/a/b/w out' README.md", "writes a file"),
    ("sed 's/a/id/e' README.md", "runs the result"),
    ("sed -n '1r /etc/passwd' README.md", "reads a file"),
    ("sed -n '/[/]w out/p' README.md", "bracket"),
    ("jq -n 'env'", "`env`"),
    ("jq -n '$ENV.HOME'", "`ENV`"),
    ("jq -n '\"\\(env.HOME)\"'", "`env`"),
    ("jq -n 'import \"x\" as x; .'", "`import`"),
    ("jq -L /tmp -n .", "`-L`"),
    ("jq --rawfile a /etc/passwd -n .", "`--rawfile`"),
    # network is off by default
    ("ls; curl http://x", "`curl`"),
]


@pytest.mark.parametrize(("cmd", "token"), STRICT_REFUSED)
def test_classified_refuses_and_names_the_token(cmd: str, token: str, ws: Path) -> None:
    result = strict(cmd, ws)
    assert not result.allowed, (cmd, result.reasons)
    assert any(token in r for r in result.reasons), (cmd, result.reasons)


def test_reads_outside_roots_are_refused_unless_listed(ws: Path, tmp_path: Path) -> None:
    assert strict("cat /proc/cpuinfo", ws).allowed
    assert not strict("cat /proc/1/environ", ws).allowed
    assert not strict(f"cat {tmp_path}/outside/secret", ws).allowed
    other = tmp_path / "other"
    other.mkdir()
    both = classify_command(f"cat {other}/x README.md", roots=[ws, other], cwd=ws)
    assert both.allowed, both.reasons


def test_the_working_directory_must_be_inside_the_roots(ws: Path, tmp_path: Path) -> None:
    result = classify_command("ls", roots=[ws], cwd=tmp_path)
    assert not result.allowed
    assert any("working directory" in r for r in result.reasons)


def test_globs_are_expanded_and_checked(ws: Path) -> None:
    assert strict("cat src/*.py", ws).allowed
    (ws / "src" / "-n.py").write_text("")
    flag = strict("cat src/*.py", ws)
    assert flag.allowed, flag.reasons  # `src/-n.py` does not start with `-`
    (ws / "--help.md").write_text("")
    as_option = strict("cat *.md", ws)
    assert not as_option.allowed
    assert any("`--help.md`" in r for r in as_option.reasons)
    outside = strict("cat l*/*", ws)
    assert not outside.allowed and any("outside the workspace" in r for r in outside.reasons)


def test_globs_only_where_every_operand_is_an_input_file(ws: Path) -> None:
    # Elsewhere a glob passes only while it matches nothing (bash then keeps it as written).
    assert not strict("grep src/*.py README.md", ws).allowed  # the pattern position
    assert strict("grep *.rs README.md", ws).allowed
    assert not strict("find . -name *.md", ws).allowed
    assert strict("find . -name *.rs", ws).allowed
    assert strict("grep -r --include=*.py foo .", ws).allowed
    assert strict("jq . *.json", ws).allowed  # files after the filter: fine
    assert not strict("uniq *.md", ws).allowed  # uniq's second operand is an output
    (ws / "--include=x.py").write_text("")
    assert not strict("grep -r --include=*.py foo .", ws).allowed


def test_network_needs_the_network_flag(ws: Path) -> None:
    tcp = "cat < /dev/tcp/127.0.0.1/80"
    assert not strict(tcp, ws).allowed
    assert "read:network" in strict(tcp, ws).capabilities


def test_program_on_a_path_inside_the_workspace_is_refused(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = ws / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "ls"
    fake.write_text("#!/bin/sh\ntouch pwned\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    result = strict("ls", ws)
    assert not result.allowed and any("the workspace controls" in r for r in result.reasons)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert strict("ls", ws).allowed


def test_version_manager_shims_that_read_the_workspace_are_refused(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shims = tmp_path / "home" / ".asdf" / "shims"
    shims.mkdir(parents=True)
    for name in ("python3", "git"):
        (shims / name).write_text('#!/bin/sh\nexec asdf exec "$0" "$@"\n')
        (shims / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{shims}:/usr/bin:/bin")
    for cmd in ("python3 --version", "git log"):
        result = strict(cmd, ws)
        assert not result.allowed and any("version-manager shim" in r for r in result.reasons)
    assert strict("echo builtins are not looked up", ws).allowed


def test_parser_disagreement_is_refused(ws: Path) -> None:
    # bash joins `-\<newline>l` into `-l`; tree-sitter keeps two words.
    result = strict("ls -\\\nl", ws)
    assert not result.allowed
    assert any("disagree" in r or "parse" in r for r in result.reasons), result.reasons
    # tree-sitter hangs `x` on the redirection; both readings still agree on the words.
    assert strict("echo a >/dev/null x", ws).allowed


# -- sandboxed: the sandbox is the wall ---------------------------------------------------

SANDBOXED_ALLOWED = [
    "frobnicate --now",
    "python3 script.py",
    "cd src && ls",
    'for f in *.py; do wc -l "$f"; done',
    "echo $(git rev-parse HEAD)",
    "cat ~/.bashrc",
    "find . -name '*.py' | xargs wc -l",
    "git -c core.pager=cat log",
    "bash -c 'ls'",
    "cat /etc/passwd",
    "ls 'unterminated",
]


@pytest.mark.parametrize("cmd", SANDBOXED_ALLOWED)
def test_sandboxed_runs_what_it_cannot_prove(cmd: str) -> None:
    result = boxed(cmd)
    assert result.allowed, (cmd, result.reasons)
    assert result.protection == "sandboxed"


SANDBOXED_REFUSED = [
    ("rm -rf build", "write:filesystem"),
    ("echo hi > out.txt", "write:filesystem"),
    ("sed -i s/a/b/ f", "write:filesystem"),
    ("find . -delete", "write:filesystem"),
    ("git commit -am x", "write:git"),
    ("git push", "write:network"),
    ("pip install requests", "write:package"),
    ("npm install", "write:package"),
    ("curl https://example.com", "read:network"),
    ("echo x > /dev/tcp/127.0.0.1/80", "write:network"),
    ("cd src && touch x", "write:filesystem"),
    ("echo $(rm x)", "write:filesystem"),
]


@pytest.mark.parametrize(("cmd", "cap"), SANDBOXED_REFUSED)
def test_sandboxed_refuses_intent_to_change_things(cmd: str, cap: str) -> None:
    result = boxed(cmd)
    assert not result.allowed, (cmd, result.reasons)
    assert cap in result.capabilities
    assert any(cap in r for r in result.reasons), result.reasons


def test_sandboxed_network_flag_allows_reads_only() -> None:
    assert not boxed("curl https://example.com").allowed
    assert boxed("curl https://example.com", network=True).allowed
    assert not boxed("curl -X POST https://example.com", network=True).allowed


# -- both ---------------------------------------------------------------------------------


@pytest.mark.parametrize("protection", PROTECTIONS)
@pytest.mark.parametrize(
    ("cmd", "fragment"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("ls\x00", "NUL"),
        ("ls " + "x" * 20_000, "longer than"),
        ("echo " + "$(" * 100 + ")" * 100, "nested"),
        ("echo " + "${a:-" * 500 + "}" * 500, "nested"),
        # tree-sitter-bash 0.25 segfaults on `{` before some of these (issue #337)
        ("{\U00109f4a", "beyond U+FFFF"),
        ("ls {\U000f0000a", "beyond U+FFFF"),
        ("grep \U0001f41b src", "beyond U+FFFF"),
    ],
)
def test_bad_input_is_refused_with_a_reason(
    protection: Protection, cmd: str, fragment: str
) -> None:
    result = classify_command(cmd, protection=protection)
    assert not result.allowed
    assert any(fragment in r for r in result.reasons), result.reasons


def test_deep_statement_nesting_never_raises() -> None:
    cmd = "if true; then " * 300 + "ls" + "; fi" * 300
    for protection in PROTECTIONS:
        result = classify_command(cmd, protection=protection)
        assert isinstance(result.allowed, bool)
    assert not classify_command(cmd).allowed


def test_result_shape(ws: Path) -> None:
    result = strict("git log -1", ws)
    assert isinstance(result, Classification)
    assert result.to_json("git log -1") == {
        "cmd": "git log -1",
        "allowed": True,
        "capabilities": ["read:git"],
        "reasons": ["`git log` reads history (read:git)"],
    }
    assert result.programs == frozenset({"git", "git log"})


def test_data_tables_load_and_are_valid() -> None:
    table = database()
    read_only = {name for name, prog in table.programs.items() if prog.read_only}
    assert {"ls", "git", "grep", "rg", "jq", "sed", "awk"} <= read_only
    for name in read_only:
        prog = table.programs[name]
        assert prog.caps - prog.drops(set(prog.requires)) <= PLAN_ALLOWED_CAPABILITIES, name
    assert {"rm", "git", "curl"} <= set(table.programs)
    assert not {"rm", "curl"} & read_only
    for name, prog in table.programs.items():
        assert prog.caps <= CAPABILITIES, name


@pytest.mark.process
def test_importing_the_package_does_not_load_tree_sitter() -> None:
    code = (
        "import sys, plan_lsp.policy.shell, plan_lsp.tools.bash;"
        "assert 'tree_sitter' not in sys.modules, 'loaded';"
        "plan_lsp.policy.shell.classify_command('ls');"
        "assert 'tree_sitter' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
