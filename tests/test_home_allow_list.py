"""A workspace root that is the home (or holds it: `/home`, `/`) shows the project's files
and none of the home's dot files and dot folders but the allow-list (`HOME_VISIBLE`: the
toolchains), under bubblewrap, Landlock and `classified`, and to the file tools. The fake
home holds the credentials of many tools, each with a canary of its own, and one file no
list knows; every command and tool below must print none of them."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from plan_lsp.core.plain_ports import NoEditor
from plan_lsp.policy.ports import PermissionRequest
from plan_lsp.policy.sandbox import BUBBLEWRAP, LANDLOCK, Mechanism
from plan_lsp.policy.sandbox.git import unsandboxed_plan_env
from plan_lsp.policy.sandbox.layout import HOME_VISIBLE, plan_layout
from plan_lsp.policy.shell import classify_command
from plan_lsp.protocol.state import Question
from plan_lsp.tools import fs
from plan_lsp.tools.base import ToolContext
from plan_lsp.tools.fs_common import GREP_CAP
from plan_lsp.tools.grep import grep
from tests.needs import need_program
from tests.sandbox_support import require, run_in

CANARY = "CANARY"
SECRETS = (
    ".ssh/id_ed25519",
    ".aws/credentials",
    ".config/gh/hosts.yml",
    ".config/git/credentials",
    ".git-credentials",
    ".pgpass",
    ".my.cnf",
    ".docker/config.json",
    ".npmrc",
    ".pypirc",
    ".bash_history",
    ".zsh_history",
    ".netrc",
    ".kube/config",
    ".config/some-new-tool/token",
    ".cargo/credentials.toml",
    ".local/share/keyrings/login.keyring",
    ".local/state/plan-lsp/state-key",
)
PROJECT = "PROJECT-VISIBLE"
TOOLCHAIN = "TOOLCHAIN-VISIBLE"
VISIBLE = {"src/app.py": PROJECT, ".cargo/bin/tool": TOOLCHAIN, ".local/bin/helper": TOOLCHAIN}


def _canary(rel: str) -> str:
    return f"{CANARY}-{rel.replace('/', '-').strip('.-')}"


def make_home(base: Path) -> Path:
    """`base/home/user`: credentials of many tools, a project, a toolchain, and links in the
    project to the credentials (a link is read at its target)."""
    home = base / "home" / "user"
    for rel in SECRETS:
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"secret = {_canary(rel)}\n")
    for rel, text in VISIBLE.items():
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{text}\n")
    (home / "src" / "key-link").symlink_to(home / ".ssh" / "id_ed25519")
    (home / "src" / "aws-link").symlink_to(home / ".aws")
    (home / ".work").symlink_to(home / "src")  # a dot link into the project
    return home.resolve()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    found = make_home(tmp_path)
    monkeypatch.setenv("HOME", str(found))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    yield found


def _no_canary(text: str) -> None:
    leaked = sorted({w for w in text.split() if CANARY in w})
    assert not leaked, f"secrets leaked: {leaked}\n{text[-3000:]}"


# -- the layout ------------------------------------------------------------------------------


@pytest.mark.parametrize("level", [0, 1, 2], ids=["home", "homes", "above"])
def test_every_dot_entry_but_the_toolchains_is_hidden(home: Path, level: int) -> None:
    root = [home, home.parent, home.parent.parent][level]
    layout = plan_layout([root], os.environ)
    hidden = layout.credentials

    def is_hidden(path: Path) -> bool:
        real = Path(os.path.realpath(path))
        return any(real == h or real.is_relative_to(h) for h in hidden)

    for rel in SECRETS:
        assert is_hidden(home / rel), rel
    for rel in VISIBLE:
        assert not is_hidden(home / rel), rel
    assert ".cargo/bin" in HOME_VISIBLE and ".ssh" not in str(HOME_VISIBLE)


def test_a_root_inside_the_home_keeps_the_known_list_only(home: Path) -> None:
    """`~/src` as the root: the home stays covered as a whole (its dot entries are not named
    one by one; they are not shown)."""
    layout = plan_layout([home / "src"], os.environ)
    assert home in layout.hidden_dirs
    assert not any(p.is_relative_to(home / ".config") for p in layout.credentials)


# -- the sandboxes ---------------------------------------------------------------------------

# Every way to read the home wholesale, then each file by name and through the links.
SANDBOX_SCRIPT = """
grep -r {canary} . 2>&1
find . -type f -exec cat {{}} + 2>&1
tar -cf - . 2>/dev/null | tar -xOf - 2>&1
cat {names} 2>&1
cat {p}src/key-link {p}src/aws-link/credentials 2>&1
ls -laR . 2>&1
cat {visible}
cat {p}.work/app.py
echo end
"""


def _scratch(tmp_path: Path, mechanism: Mechanism) -> Path | None:
    if mechanism != LANDLOCK:
        return None
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    return scratch


def _sandbox_run(mechanism: Mechanism, tmp_path: Path, root: Path, home: Path) -> str:
    prefix = os.path.relpath(home, root)
    names = " ".join(os.path.normpath(f"{prefix}/{rel}") for rel in SECRETS)
    visible = " ".join(os.path.normpath(f"{prefix}/{rel}") for rel in VISIBLE)
    p = "" if prefix == "." else prefix + "/"
    script = SANDBOX_SCRIPT.format(canary=CANARY, names=names, visible=visible, p=p)
    proc = run_in(
        mechanism, root, script, roots=[root], env=dict(os.environ),
        scratch=_scratch(tmp_path, mechanism),
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert "end" in proc.stdout.split(), out[-3000:]
    return out


@pytest.mark.parametrize("mechanism", [BUBBLEWRAP, LANDLOCK])
@pytest.mark.parametrize("level", [0, 1], ids=["home", "homes"])
def test_plan_commands_print_no_secret_of_the_home(
    mechanism: Mechanism, level: int, home: Path, tmp_path: Path
) -> None:
    require(mechanism)
    root = [home, home.parent][level]
    out = _sandbox_run(mechanism, tmp_path, root, home)
    _no_canary(out)
    assert out.count(PROJECT) >= 2, out[-3000:]  # src/app.py, and through `.work`
    assert out.count(TOOLCHAIN) >= 2, out[-3000:]  # ~/.cargo/bin, ~/.local/bin


@pytest.mark.parametrize("mechanism", [BUBBLEWRAP, LANDLOCK])
def test_a_dot_entry_created_later_is_hidden_too(
    mechanism: Mechanism, home: Path, tmp_path: Path
) -> None:
    require(mechanism)
    _no_canary(_sandbox_run(mechanism, tmp_path, home, home))
    (home / ".tool-of-tomorrow").mkdir()
    (home / ".tool-of-tomorrow" / "token").write_text(f"{CANARY}-tomorrow\n")
    (home / ".tomorrowrc").write_text(f"{CANARY}-tomorrowrc\n")
    script = "cat .tool-of-tomorrow/token .tomorrowrc; grep -r CANARY . ; cat src/app.py"
    proc = run_in(
        mechanism, home, script, roots=[home], env=dict(os.environ),
        scratch=_scratch(tmp_path, mechanism),
    )  # fmt: skip
    _no_canary(proc.stdout + proc.stderr)
    assert PROJECT in proc.stdout, proc.stderr


@pytest.mark.parametrize("mechanism", [BUBBLEWRAP, LANDLOCK])
def test_a_project_file_created_later_is_readable(
    mechanism: Mechanism, home: Path, tmp_path: Path
) -> None:
    """Next to the hidden dot entries the home's own entries are granted one by one under
    Landlock: one the user adds after the first command is granted too."""
    require(mechanism)
    scratch = _scratch(tmp_path, mechanism)
    first = run_in(mechanism, home, "cat src/app.py", roots=[home], env=dict(os.environ),
                   scratch=scratch)  # fmt: skip
    assert PROJECT in first.stdout, first.stderr
    (home / "notes.txt").write_text("NOTES-VISIBLE\n")
    later = run_in(mechanism, home, "cat notes.txt", roots=[home], env=dict(os.environ),
                   scratch=scratch)  # fmt: skip
    assert "NOTES-VISIBLE" in later.stdout, later.stderr


# -- classified ------------------------------------------------------------------------------

# Commands a model may try; each either is refused or, run for real, prints no canary.
CLASSIFIED_TRIES = [
    *(f"cat {rel}" for rel in SECRETS),
    *(f"head -c 200 {rel}" for rel in SECRETS[:4]),
    "grep -r CANARY .", "grep -r CANARY", "grep -R CANARY", "grep -d recurse CANARY",
    "grep -rl CANARY .config", "grep CANARY .*", "grep -r CANARY src .aws",
    "rg CANARY", "rg --hidden CANARY", "rg -uuu CANARY .", "rg --hidden CANARY src",
    "find . -name '*'", "find", "find . -type f -newer .pgpass", "find .ssh",
    "tar -tvf .pgpass", "cat .*/*", "cat .*", "cat < .netrc", "cat src/key-link",
    "cat src/aws-link/credentials", "cat src/../.pgpass", "cd .aws && cat credentials",
    "cd .config; cat gh/hosts.yml", "cd src && cat ../.netrc", "tree -a", "ls -laR", "du -a",
    "fd -H .", "fd -H . .config", "xxd .pgpass", "base64 .my.cnf", "sort .bash_history",
    "wc -c .zsh_history", "diff .npmrc .pypirc", "sha256sum .netrc", "strings .kube/config",
    "cat .work/../.pgpass", "git -C .config grep CANARY", "ls .ssh",
]  # fmt: skip
# And what stays allowed, with what it prints.
CLASSIFIED_ALLOWED = {
    "cat src/app.py": PROJECT,
    "cat .cargo/bin/tool": TOOLCHAIN,
    "grep -r VISIBLE src": PROJECT,
    "cat .work/app.py": PROJECT,
    "cd src && cat app.py": PROJECT,
    "ls -la": "src",
}


def _run_classified(command: str, home: Path) -> str:
    private = home.parent / "private-home"
    private.mkdir(exist_ok=True)
    proc = subprocess.run(
        ["bash", "-c", command], cwd=home, env=unsandboxed_plan_env(private, os.environ),
        capture_output=True, text=True, timeout=60, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    return proc.stdout + proc.stderr


def test_classified_prints_no_secret_of_the_home(home: Path) -> None:
    allowed = []
    for command in CLASSIFIED_TRIES:
        result = classify_command(command, roots=[home], cwd=home)
        if result.allowed:
            allowed.append(command)
            _no_canary(_run_classified(command, home))
    # The direct reads are refused, naming the path and why.
    for rel in SECRETS:
        result = classify_command(f"cat {rel}", roots=[home], cwd=home)
        assert not result.allowed
        reason = " ".join(result.reasons)
        assert rel.split("/")[0] in reason and "plan mode hides" in reason, reason
    assert len(allowed) <= 3, allowed  # `ls .ssh`-like listings at most, never content


@pytest.mark.parametrize("command", sorted(CLASSIFIED_ALLOWED))
def test_classified_still_reads_the_project_and_the_toolchain(home: Path, command: str) -> None:
    result = classify_command(command, roots=[home], cwd=home)
    assert result.allowed, result.reasons
    out = _run_classified(command, home)
    assert CLASSIFIED_ALLOWED[command] in out, out
    _no_canary(out)


@pytest.mark.parametrize("command", ["rg CANARY", "grep -r CANARY", "find", "tree", "du"])
def test_a_walk_of_the_home_names_why_it_is_refused(home: Path, command: str) -> None:
    result = classify_command(command, roots=[home], cwd=home)
    assert not result.allowed
    reason = " ".join(result.reasons)
    assert "walks the working directory" in reason and "plan mode hides" in reason, reason


def test_classified_refuses_a_dot_entry_made_after_the_first_command(home: Path) -> None:
    assert classify_command("cat src/app.py", roots=[home], cwd=home).allowed
    (home / ".later-tool").mkdir()
    (home / ".later-tool" / "token").write_text(f"{CANARY}-later\n")
    result = classify_command("cat .later-tool/token", roots=[home], cwd=home)
    assert not result.allowed and ".later-tool" in " ".join(result.reasons)


def test_a_root_holding_the_home_refuses_the_same(home: Path) -> None:
    homes = home.parent
    for rel in SECRETS:
        assert not classify_command(f"cat user/{rel}", roots=[homes], cwd=homes).allowed, rel
    assert classify_command("cat user/src/app.py", roots=[homes], cwd=homes).allowed
    assert not classify_command("grep -r CANARY .", roots=[homes], cwd=homes).allowed


# -- the file tools --------------------------------------------------------------------------


class NoUser:
    async def request_permission(self, request: PermissionRequest) -> str:
        return "reject_once"

    async def ask_questions(self, run_id: str, questions: list[Question]) -> None:
        return None


@pytest.fixture
def ctx(home: Path) -> ToolContext:
    return ToolContext(
        workspace_roots=[home],
        plans_dir=home / ".plan-lsp" / "plans",
        run_id="run-1",
        editor=NoEditor(),
        user=NoUser(),  # type: ignore[arg-type]
        emit=lambda kind, payload: None,
    )


@pytest.fixture(params=["ripgrep", "python"])
def grep_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    backend: str = request.param
    if backend == "ripgrep":
        need_program("rg", "the grep tool's fast path")
    else:
        monkeypatch.setattr("shutil.which", lambda name: None)
    return backend


async def test_the_file_tools_show_no_secret_of_the_home(
    home: Path, ctx: ToolContext, grep_backend: str
) -> None:
    for rel in [*SECRETS, "src/key-link", "src/aws-link/credentials"]:
        result = await fs.read_file({"path": rel}, ctx)
        assert result.is_error and "hidden" in result.content, (rel, result.content)
        _no_canary(result.content)
    for rel, text in VISIBLE.items():
        result = await fs.read_file({"path": rel}, ctx)
        assert not result.is_error and text in result.content, (rel, result.content)
    searched = await grep({"pattern": "CANARY|VISIBLE"}, ctx)
    _no_canary(searched.content)
    assert PROJECT in searched.content and TOOLCHAIN in searched.content, searched.content
    found = await fs.glob_tool({"pattern": "**/*"}, ctx)
    assert "src/app.py" in found.content and ".cargo/bin/tool" in found.content
    for rel in SECRETS:
        assert rel not in found.content, rel
    listed = (await fs.list_dir({"path": "."}, ctx)).content.split()
    assert sorted(n for n in listed if n.startswith(".")) == [".cargo/", ".local/", ".work"]
    assert (await fs.list_dir({"path": ".cargo"}, ctx)).content.split() == ["bin/"]
    assert "key-link" not in (await fs.list_dir({"path": "src"}, ctx)).content
    for folder in (".ssh", ".config", ".local/state"):
        result = await fs.list_dir({"path": folder}, ctx)
        assert result.is_error and "hidden" in result.content, (folder, result.content)


# -- a home that is a git repository of its dot files ------------------------------------------

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.com", "GIT_COMMITTER_NAME": "a",
    "GIT_COMMITTER_EMAIL": "a@example.com", "GIT_CONFIG_NOSYSTEM": "1",
}  # fmt: skip
GIT_TRIES = ["git log -p", "git show HEAD:.pgpass", "git grep CANARY", "git diff HEAD~0"]


def _dotfiles_repository(home: Path) -> None:
    """The home as a git repository that tracks `.pgpass` and the project."""
    env = {**os.environ, **_GIT_ENV}
    for args in (["init", "-q"], ["add", ".pgpass", "src/app.py"], ["commit", "-qm", "dots"]):
        subprocess.run(["git", "-C", str(home), *args], check=True, env=env, timeout=30)


@pytest.mark.parametrize("inside", [False, True], ids=["home", "project-in-home"])
def test_classified_git_does_not_read_the_homes_repository(home: Path, inside: bool) -> None:
    need_program("git", "the home's repository")
    _dotfiles_repository(home)
    root = home / "src" if inside else home
    for command in GIT_TRIES:
        result = classify_command(command, roots=[root], cwd=root)
        assert not result.allowed, command
        reason = " ".join(result.reasons)
        assert f"{home}/.git" in reason and "dot files" in reason, reason


@pytest.mark.parametrize("mechanism", [BUBBLEWRAP, LANDLOCK])
def test_sandboxed_git_does_not_read_the_homes_repository(
    mechanism: Mechanism, home: Path, tmp_path: Path
) -> None:
    require(mechanism)
    need_program("git", "the home's repository")
    _dotfiles_repository(home)
    tries = "; ".join(f"{c} 2>&1" for c in GIT_TRIES)
    for root, app in ((home, "src/app.py"), (home / "src", "app.py")):
        proc = run_in(
            mechanism, root, f"{tries}; cat {app}", roots=[root], env=dict(os.environ),
            scratch=_scratch(tmp_path, mechanism),
        )  # fmt: skip
        _no_canary(proc.stdout + proc.stderr)
        assert PROJECT in proc.stdout, proc.stdout + proc.stderr


async def test_grep_finds_the_project_past_many_hidden_matches(
    home: Path, ctx: ToolContext, grep_backend: str
) -> None:
    """The home's dot folders sort first and may hold more matches than the tool returns:
    they are dropped before they count, so the project's match is still found."""
    (home / ".cache").mkdir()
    (home / ".cache" / "log.txt").write_text(f"{CANARY}-cache VISIBLE\n" * (GREP_CAP + 50))
    result = await grep({"pattern": "VISIBLE"}, ctx)
    _no_canary(result.content)
    assert "src/app.py" in result.content and PROJECT in result.content, result.content
