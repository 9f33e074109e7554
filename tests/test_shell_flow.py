"""`classified`: control flow, here-documents, `cd`, and the whole-command checks of the
newer allow-list entries (archives, binaries, checksum lists, git configuration)."""

from __future__ import annotations

from pathlib import Path

import pytest

from plan_lsp.policy.shell import Classification, classify_command
from plan_lsp.policy.shell.database import database
from plan_lsp.policy.shell.valuecheck import CHECKS
from plan_lsp.policy.shell.verify import VERIFIERS


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print(1)\n")
    (root / "src" / "util.py").write_text("x = 1\n")
    (root / "README.md").write_text("# readme\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("token\n")
    (root / "out").symlink_to(outside)
    (root / "SUMS").write_text(f"{'0' * 64}  README.md\n")
    (root / "BAD").write_text(f"{'0' * 64}  README.md\n{'0' * 64}  {outside}/secret\n")
    (root / "ESCAPED").write_text(f"\\{'0' * 64}  ../outside/sec\\\\ret\n")
    return root


def strict(cmd: str, ws: Path) -> Classification:
    return classify_command(cmd, protection="classified", roots=[ws], cwd=ws)


ALLOWED = [
    "cd src && ls",
    "cd src/pkg; ls -la",
    "cd src && cat app.py",
    "(cd src && ls) && cat README.md",
    "[ -f README.md ] && cat README.md",
    "[ ! -d build ] || ls build",
    'test -n "x" && echo yes',
    "test 1 -eq 2 || echo no",
    "if [ -d src ]; then ls src; elif true; then echo; else echo none; fi",
    'for f in src/*.py; do wc -l "$f"; done',
    "for f in src/*.py; do wc -l $f; done",
    'for d in src README.md; do ls "$d"; done | sort',
    'for f in a b; do for g in x y; do echo "$f$g"; done; done',
    "case x in a|b) echo 1;; *) echo 2;; esac",
    "while false; do ls; done",
    "{ git status; ls; } 2>&1",
    "! grep -q x README.md",
    "cat <<'EOF'\nline $x `y`\nEOF",
    "cat <<EOF\nplain text\nEOF",
    "head -1 <<-'EOF'\n\tindented\n\tEOF",
    "grep -c x <<'EOF' | wc -l\nxyz\nEOF",
    "tr a-z A-Z <<< 'hello'",
    "sha256sum -c SUMS",
    "git config --get remote.origin.url",
    "git config --local --list",
    "git symbolic-ref --short HEAD",
    "tar tzf dist/app.tar.gz",
    "unzip -l dist/app.zip",
    "yq '.a.b[0]' config.yml",
    "git log --oneline $(git merge-base HEAD main)..HEAD",
    "git diff $(git rev-parse --verify HEAD~3) --stat",
    "git show --stat $(git rev-list -n 1 HEAD)",
    'echo "branch: $(git branch --show-current)"',
    'for f in src/*.py; do echo "$f: $(wc -l < "$f")"; done',
    'case "$(uname -s)" in Linux) echo linux;; *) echo other;; esac',
    "case $(uname -s) in Linux) echo linux;; esac",
    '[ -n "$(git status --porcelain)" ] && echo dirty',
    'test -z "$(git diff --name-only)" || git diff --stat',
    '[ "$(git status -s)" ] && echo dirty',
]


@pytest.mark.parametrize("cmd", ALLOWED)
def test_flow_and_new_programs_allowed(cmd: str, ws: Path) -> None:
    result = strict(cmd, ws)
    assert result.allowed, (cmd, result.reasons)


REFUSED = [
    # cd: where bash goes is not where a check would look
    ("cd .. && ls", "`cd ..`"),
    ("cd && ls", "`cd`"),
    ("cd - && ls", "`cd -`"),
    ("cd out && cat secret", "outside the workspace"),
    ("cd src && cat ../../outside/secret", "outside the workspace"),
    ("cd src; cat ../../outside/secret", "outside the workspace"),
    # `cd` may fail: what follows is checked from both directories.
    ("cd src && cat ../README.md", "outside the workspace"),
    ("{ cd src; } && cat ../../outside/secret", "outside the workspace"),
    ("if true; then cd src; fi; cat ../../outside/secret", "outside the workspace"),
    ("for d in src; do cd $d; done; cat ../../outside/secret", "outside the workspace"),
    ("while true; do cd src; done", "`while`"),
    # loops: values and variables
    ("for PATH in src; do ls; done", "`PATH`"),
    ("for f in 'a b'; do ls $f; done", "split"),
    ("for c in rm; do $c x; done", "`rm`"),
    ("for o in -o; do sort $o x README.md; done", "`-o`"),
    ("for f in x; do echo $g; done", "$g"),
    ("for f in $(ls); do echo; done", "`for` list"),
    ('for f in out/*; do cat "$f"; done', "outside the workspace"),
    ('for f in .*; do cat "$f/outside/secret"; done', "outside the workspace"),
    ("select f in a; do ls; done", "`select`"),
    ("for f in a; do ls; done &", "`&`"),
    # test and [ ]
    ("test -v 'a[$(id)]'", "`-v`"),
    ("[ -R x ]", "`-R`"),
    ("[[ -f x ]]", "`[[ ]]`"),
    ("[ -f ../outside/secret ]", "outside the workspace"),
    ("[ a < b ]", "disagree"),
    # case
    ("case x in $(id)) ls;; esac", "pattern"),
    # here-documents
    ("cat <<EOF\n$(id)\nEOF", "`$`"),
    ("cat <<EOF\n`id`\nEOF", "backquote"),
    ("cat <<'EOF'\nx\n EOF\nrm -rf x\nEOF", "disagree"),
    ("cat <<E\\OF\nx\nEOF", "delimiter"),
    ("cat <<'EOF' > x\ny\nEOF", "`> x`"),
    ("tee x <<'EOF'\ny\nEOF", "`tee`"),
    ("cat <<'EOF' | tee x\ny\nEOF", "`tee`"),
    ("grep x <<< $(id)", "here-string"),
    ("for f in a; do echo; done > x", "`> x`"),
    ("while true; do ls; done < ../outside/secret", "outside the workspace"),
    # checksum lists name files
    ("sha256sum -c BAD", "line 2"),
    ("sha256sum -c ESCAPED", "outside the workspace"),
    ("sha256sum --check", "standard input"),
    ("sha256sum -c -", "one file"),
    # command substitution: the inner command is checked, its output stands only where it
    # cannot matter
    ("wc -l $(git ls-files)", "words nobody has seen"),
    ('cat "$(git rev-parse --show-toplevel)/README.md"', "words nobody has seen"),
    ("echo $(git branch --show-current)", "words nobody has seen"),
    ("git log $(git rev-parse HEAD)", "words nobody has seen"),
    ("cat $(git rev-parse --verify HEAD)", "read as a file name"),
    ("git grep -f $(git rev-parse --verify HEAD) x", "read as a file name"),
    ("git -C $(git rev-parse --verify HEAD) log", "read as a file name"),
    ('echo "$(rm -rf src)"', "`rm`"),
    ('echo "$(cat ../outside/secret)"', "outside the workspace"),
    ("echo `ls`", "backquotes"),
    # in `test`, only compared with the empty string: never an operator, never a file
    ('[ "$(git status -s)" = x ]', "words nobody has seen"),
    ("test \"$(git status -s)\" 'a[$(id)]'", "words nobody has seen"),
    ("[ -n $(git status -s) ]", "words nobody has seen"),
    ('test -f "$(git rev-parse --show-toplevel)"', "words nobody has seen"),
    ('case "$(rm -rf x)" in *) ls;; esac', "`rm`"),
    ("case $HOME in *) ls;; esac", "`case`"),
    # nested too deep
    ("if true; then " * 70 + "ls" + "; fi" * 70, "nested"),
]


@pytest.mark.parametrize(("cmd", "token"), REFUSED)
def test_flow_refusals_name_the_reason(cmd: str, token: str, ws: Path) -> None:
    result = strict(cmd, ws)
    assert not result.allowed, (cmd, result.reasons)
    assert any(token in r for r in result.reasons), (cmd, result.reasons)


def test_cdpath_makes_bare_names_ambiguous(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CDPATH", str(ws.parent / "outside"))
    assert not strict("cd src && ls", ws).allowed
    assert strict("cd ./src && ls", ws).allowed


def test_loop_variable_in_the_environment_is_refused(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("http_proxy", "http://proxy.example")
    result = strict("for http_proxy in x; do ls; done", ws)
    assert not result.allowed
    assert any("environment" in r for r in result.reasons)


def test_dot_glob_matches_dot_and_dot_dot(ws: Path) -> None:
    """bash before 5.2 expands `.*` to `.` and `..` too: `..` is outside the root."""
    result = strict("cat .*", ws)
    assert not result.allowed
    assert any("`..`" in r for r in result.reasons)


def test_response_files_are_refused_for_binutils(ws: Path) -> None:
    (ws / "@opts").write_text("--plugin=x\n")
    for cmd in ("strings @opts", "nm @opts", "objdump -d @opts", "readelf -a @opts"):
        result = strict(cmd, ws)
        assert not result.allowed, cmd
        assert any("`@`" in r for r in result.reasons), (cmd, result.reasons)
    # A glob that would expand to such a name.
    assert not strict("strings @*", ws).allowed


def test_git_config_reads_only_the_repository_without_a_scope(ws: Path) -> None:
    assert not strict("git config --get pypi.password", ws).allowed
    assert not strict("git config --get credential.helper", ws).allowed
    assert not strict("git config --list", ws).allowed
    assert strict("git config --local --get pypi.password", ws).allowed
    assert strict("git config --file .gitmodules --get-regexp path", ws).allowed
    assert not strict("git config --file ../outside/secret --list", ws).allowed
    assert not strict("git config --local --get set", ws).allowed


def test_every_named_check_exists() -> None:
    def walk(programs: dict[str, object]) -> None:
        for prog in programs.values():
            verify = getattr(prog, "verify", None)
            if verify is not None:
                assert verify in VERIFIERS, verify
            for opt in getattr(prog, "options", {}).values():
                if opt.check is not None:
                    assert opt.check in CHECKS, opt.check
            walk(getattr(prog, "subcommands", {}))

    walk(dict(database().programs))


def test_remote_urls_are_not_printed_when_the_configuration_includes_files(ws: Path) -> None:
    """A repository's `include.path` can pull in a sibling repository's configuration: git
    then prints that repository's remote URL (and the token in it) as its own."""
    git = ws / ".git"
    git.mkdir()
    (git / "config").write_text('[remote "origin"]\n\turl = https://example.com/r.git\n')
    for cmd in ("git remote -v", "git remote get-url origin", "git config --get remote.origin.url"):
        assert strict(cmd, ws).allowed, cmd
    with (git / "config").open("a") as config:
        config.write("[include]\n\tpath = ../../other/.git/config\n")
    for cmd in ("git remote -v", "git remote get-url origin", "git config --get remote.origin.url"):
        result = strict(cmd, ws)
        assert not result.allowed, cmd
        assert any("include" in r for r in result.reasons), (cmd, result.reasons)
    assert strict("git remote", ws).allowed
    assert strict("git config --local --get remote.origin.url", ws).allowed
