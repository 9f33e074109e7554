"""Files that run code later (`policy/autorun.toml`) are never changed without the user's yes.

For each protected file, write route and permission mode: the permission engine asks
(yolo too) with the file's warning, and a refusal reaches the model with it; the same
writes with the file's name hidden from the command's words run through the real build
sandbox and change nothing; an allow rule naming the exact path allows it, a wildcard rule
does not; any spelling of a protected path (case, `./`, `//`, `..`, links) asks."""

from __future__ import annotations

import base64
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plan_lsp.policy.autorun import autorun, command_hits, protected
from plan_lsp.policy.execution import ExecutionGate
from plan_lsp.policy.modes import Actor
from plan_lsp.policy.permissions import PermissionDecision, PermissionEngine, RuleScope
from plan_lsp.policy.ports import PermissionRequest
from plan_lsp.policy.safety import ToolDefinition
from plan_lsp.protocol.state import PermissionAnswer, PermissionMode, WorkMode
from plan_lsp.tools.bash import BASH_TOOL
from plan_lsp.tools.edit import EDIT_FILE_TOOL, WRITE_FILE_TOOL
from tests.needs import need, need_program

# Each protected file (relative to the workspace root) and a phrase of its warning.
FILES = {
    ".git/hooks/pre-commit": "git runs these hooks",
    ".git/hooks/post-checkout": "git runs these hooks",
    ".git/config": "git reads this on every command",
    ".git/info/attributes": "filter and diff programs",
    ".git/modules/lib/config": "in that submodule",
    ".git/modules/lib/hooks/pre-commit": "submodule hooks",
    ".vscode/tasks.json": "VS Code runs tasks from this file",
    ".vscode/settings.json": "VS Code applies these settings",
    ".vscode/launch.json": "when you start debugging",
    ".idea/workspace.xml": "JetBrains IDEs run",
    ".nvim.lua": "Neovim runs this file when it opens the folder",
    ".nvimrc": "Neovim runs this file",
    ".exrc": "Vim and Neovim run this file",
    ".vimrc": "Vim runs this file",
    ".dir-locals.el": "Emacs applies these variables",
    ".dir-locals-2.el": "Emacs applies these variables",
    ".envrc": "direnv runs this when you enter the folder",
    ".devcontainer/devcontainer.json": "dev container tools run",
}
# Shell routes: `{f}` the file as the command names it.
ROUTES = {
    "redirect": "echo evil >> {f}",
    "git config": "git config --file {f} core.pager evil",
    "cp": "cp payload.sh {f}",
    "ln -s": "ln -sf payload.sh {f}",
}
MODES = list(PermissionMode)
EXISTING = (".git/config", ".git/hooks/post-checkout", ".vscode/settings.json", ".envrc")


def _git(ws: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(ws), *args], check=True, capture_output=True)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace holding a repository laid out as `git init` makes it (made by hand: the
    unit tier starts no process), a submodule's git dir, and a few of the files already."""
    ws = tmp_path / "ws"
    for folder in (".git/hooks", ".git/info", ".git/objects", ".git/refs/heads",
                   ".git/modules/lib/hooks", ".vscode"):  # fmt: skip
        (ws / folder).mkdir(parents=True)
    (ws / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (ws / ".git" / "config").write_text("[core]\n\trepositoryformatversion = 0\n\tbare = false\n")
    (ws / ".git" / "modules" / "lib" / "config").write_text("[core]\n")
    for name in EXISTING:
        path = ws / name
        if not path.exists():
            path.write_text("kept\n")
    (ws / "payload.sh").write_text("#!/bin/sh\ntouch /tmp/pwned\n")
    return ws


def _engine(ws: Path, **rules: list[str]) -> PermissionEngine:
    return PermissionEngine(
        rules.get("allow", []), rules.get("ask", []), rules.get("deny", []),
        scope=RuleScope.USER, workspace_roots=[ws],
    )  # fmt: skip


def _decide(
    engine: PermissionEngine, d: ToolDefinition, mode: PermissionMode, **args: Any
) -> PermissionDecision:
    return engine.decide(d, args, permission_mode=mode, work_mode=WorkMode.BUILD)


def _edit_args(tool: str, name: str) -> dict[str, Any]:
    if tool == "write_file":
        return {"path": name, "content": "evil\n"}
    return {"path": name, "old_text": "kept", "new_text": "evil"}


EDITORS = {"write_file": WRITE_FILE_TOOL.definition, "edit_file": EDIT_FILE_TOOL.definition}


def test_the_list_loads_and_every_entry_says_what_runs_it() -> None:
    table = autorun()
    assert len(table.file) >= 18
    assert all(len(e.warning) >= 10 for e in table.file)
    assert {e.path for e in table.file} >= {".git", "config", "hooks/", ".envrc", ".idea/"}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("tool", EDITORS)
@pytest.mark.parametrize("name", FILES)
def test_an_edit_tool_asks_in_every_mode_with_the_warning(
    ws: Path, name: str, tool: str, mode: PermissionMode
) -> None:
    decision = _decide(_engine(ws), EDITORS[tool], mode, **_edit_args(tool, name))
    assert decision.verdict == "ask", decision
    assert FILES[name] in decision.warning and name in decision.warning


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("name", FILES)
def test_a_shell_command_naming_one_asks_in_every_mode(
    ws: Path, name: str, route: str, mode: PermissionMode
) -> None:
    command = ROUTES[route].format(f=name)
    decision = _decide(_engine(ws), BASH_TOOL.definition, mode, command=command)
    assert decision.verdict == "ask", decision
    assert name in decision.warning and FILES[name] in decision.warning


@pytest.mark.parametrize(
    "command",
    [
        "git config core.hooksPath evil",
        "git -c core.pager=evil log",
        "git remote add origin https://example.invalid/x",
        "cd sub && echo evil > ../.envrc",
        "cd .git/hooks && cp ../../payload.sh pre-push",
        "cp payload.sh .GIT/HOOKS/Pre-Commit",
        "echo x>.vscode/tasks.json",
        "rm -rf .git",
    ],
)
def test_git_subcommands_redirects_and_spellings_count(ws: Path, command: str) -> None:
    decision = _decide(_engine(ws), BASH_TOOL.definition, PermissionMode.YOLO, command=command)
    assert decision.verdict == "ask", decision


@pytest.mark.parametrize(
    "command", ["git commit -m x", "pytest -q", "echo hi > notes.txt", "cp a.py b.py"]
)
def test_ordinary_commands_do_not_ask_in_yolo(ws: Path, command: str) -> None:
    decision = _decide(_engine(ws), BASH_TOOL.definition, PermissionMode.YOLO, command=command)
    assert decision.verdict == "allow", decision


def test_ordinary_files_follow_the_mode(ws: Path) -> None:
    for name in ("src/a.py", ".vscode/extensions.json", ".github/workflows/ci.yml", "git/hooks"):
        decision = _decide(
            _engine(ws), EDITORS["write_file"], PermissionMode.AUTO_EDIT, path=name, content=""
        )
        assert decision.verdict == "allow", (name, decision)


def test_a_rule_naming_the_exact_path_allows_it_a_wildcard_does_not(ws: Path) -> None:
    hook = ".git/hooks/pre-commit"
    write = EDITORS["write_file"]
    for rule in ("write_file", "write_file(**)", "write_file(.git/**)", "write_file(.git/hooks/*)",
                 "*(.git/hooks/pre-commit)", "write_file(.git/hooks/pre-commi?)"):  # fmt: skip
        decision = _decide(_engine(ws, allow=[rule]), write, PermissionMode.YOLO, path=hook)
        assert decision.verdict == "ask", rule
    exact = _engine(ws, allow=[f"write_file({hook})"])
    assert _decide(exact, write, PermissionMode.ASK, path=hook).verdict == "allow"
    # That rule names one file: the next hook still asks; a deny rule still wins.
    assert _decide(exact, write, PermissionMode.YOLO, path=".git/hooks/pre-push").verdict == "ask"
    both = _engine(ws, allow=[f"write_file({hook})"], deny=["write_file(.git/**)"])
    assert _decide(both, write, PermissionMode.YOLO, path=hook).verdict == "deny"
    command = "git config user.name me"
    allowed = _engine(ws, allow=[f"bash({command})"])
    assert (
        _decide(allowed, BASH_TOOL.definition, PermissionMode.ASK, command=command).verdict
        == "allow"
    )
    wild = _engine(ws, allow=["bash(git config *)"])
    assert (
        _decide(wild, BASH_TOOL.definition, PermissionMode.YOLO, command=command).verdict == "ask"
    )


# -- through the execution gate ------------------------------------------------------------


@dataclass
class _Session:
    permission_mode: PermissionMode
    mode: WorkMode = WorkMode.BUILD
    log: list[dict[str, Any]] = field(default_factory=list)

    def record(self, kind: str, actor: Actor, data: dict[str, Any]) -> int:
        self.log.append(data)
        return len(self.log)


class _Port:
    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.requests: list[PermissionRequest] = []

    async def request_permission(self, request: PermissionRequest) -> PermissionAnswer:
        self.requests.append(request)
        return cast(PermissionAnswer, self.answer)


@pytest.mark.parametrize("mode", MODES)
async def test_the_prompt_carries_the_warning_and_a_no_reaches_the_model(
    ws: Path, mode: PermissionMode
) -> None:
    port = _Port("reject_once")
    gate = ExecutionGate(_Session(mode), _engine(ws), port)
    decision = await gate.check(
        EDITORS["write_file"], {"path": ".git/hooks/pre-commit", "content": "x"}, "r1", None
    )
    assert not decision.allowed and decision.observation is not None
    assert "git runs these hooks" in decision.observation["reason"]
    assert "declined" in decision.observation["reason"]
    assert len(port.requests) == 1 and "git runs these hooks" in port.requests[0].summary


async def test_allow_always_covers_that_file_only(ws: Path) -> None:
    port = _Port("allow_always")
    engine = _engine(ws)
    gate = ExecutionGate(_Session(PermissionMode.YOLO), engine, port)
    write = EDITORS["write_file"]
    assert (await gate.check(write, {"path": ".envrc", "content": "x"}, "r", None)).allowed
    assert (await gate.check(write, {"path": ".envrc", "content": "y"}, "r", None)).allowed
    assert len(port.requests) == 1  # remembered: that file
    assert (await gate.check(write, {"path": ".exrc", "content": "x"}, "r", None)).allowed
    assert len(port.requests) == 2  # another file asks again


# -- links, git files and spellings --------------------------------------------------------


@pytest.mark.process
def test_links_and_git_files_resolve_to_the_real_git_dir(ws: Path, tmp_path: Path) -> None:
    (ws / "x").symlink_to(".git/hooks/pre-commit")
    (ws / "g").symlink_to(".git")
    for name in ("x", "g/config", "g/hooks/new", "./g//hooks/../hooks/x"):
        assert protected(name, [ws]), name
    # A worktree: `.git` is a file naming the git dir; its common dir holds config and hooks.
    need_program("git")
    wt = tmp_path / "wt"
    _git(
        ws, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"
    )
    _git(ws, "worktree", "add", "-q", str(wt))
    assert (wt / ".git").is_file()
    assert protected(".git", [wt])
    assert protected(str(ws / ".git" / "hooks" / "pre-commit"), [wt])
    assert protected(str(ws / ".git" / "config"), [wt])
    (wt / "hk").symlink_to(ws / ".git" / "hooks")
    assert protected("hk/post-merge", [wt])
    # core.hooksPath: that folder is the hooks folder.
    _git(ws, "config", "core.hooksPath", ".githooks")
    assert protected(".githooks/pre-commit", [ws])
    assert command_hits("cp payload.sh .githooks/pre-commit", [ws])


_SEGMENT = st.sampled_from(["a", "b", "sub"])


@st.composite
def _spellings(draw: st.DrawFn) -> str:
    name = draw(st.sampled_from(sorted(FILES)))
    prefix = draw(st.sampled_from(["", "./", "sub/../", "lnk/", "lnkgit/"]))
    if prefix == "lnkgit/":
        if name.startswith(".git/"):
            name = name.removeprefix(".git/")  # through a link to the git dir
        else:
            prefix = ""
    parts: list[str] = []
    for part in name.split("/"):
        cased = "".join(c.upper() if draw(st.booleans()) else c for c in part)
        if draw(st.booleans()):
            parts.append(".")
        if draw(st.booleans()):
            parts += [draw(_SEGMENT), ".."]  # a detour that stays inside
        parts.append(cased)
    joined = "/".join(parts)
    if draw(st.booleans()):
        joined = joined.replace("/", "//", 1)
    return prefix + joined


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(spelling=_spellings(), mode=st.sampled_from(MODES))
def test_any_spelling_of_a_protected_path_asks(
    ws: Path, spelling: str, mode: PermissionMode
) -> None:
    for folder in ("a", "b", "sub"):
        (ws / folder).mkdir(exist_ok=True)
    if not (ws / "lnk").exists():
        (ws / "lnk").symlink_to(".")
        (ws / "lnkgit").symlink_to(".git")
    for tool in EDITORS:
        decision = _decide(_engine(ws), EDITORS[tool], mode, **_edit_args(tool, spelling))
        assert decision.verdict == "ask", (spelling, tool, decision)


# -- the real build sandbox ----------------------------------------------------------------


def _hidden(route: str, name: str) -> str:
    """The route's command with the file's name out of its words (decoded when it runs)."""
    encoded = base64.b64encode(name.encode()).decode()
    return f'F=$(echo {encoded} | base64 -d); mkdir -p "$(dirname "$F")"; ' + ROUTES[route].format(
        f='"$F"'
    )


def _snapshot(ws: Path) -> dict[str, bytes | str]:
    seen: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(ws):
        for entry in (*dirnames, *filenames):
            path = Path(dirpath) / entry
            rel = str(path.relative_to(ws))
            if rel.startswith((".git/objects", ".git/logs", ".plan-lsp")):
                continue
            seen[rel] = (
                "link" if path.is_symlink() else path.read_bytes() if path.is_file() else "dir"
            )
    return seen


@pytest.mark.sandbox
@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("name", FILES)
def test_the_build_sandbox_keeps_them_when_the_command_hides_the_name(
    ws: Path, name: str, route: str
) -> None:
    from plan_lsp.policy.sandbox.bwrap import build_argv, bwrap_path

    need(bwrap_path() is not None, "bubblewrap is not installed")
    command = _hidden(route, name)
    # Unnamed: no prompt in yolo (but for `git config`, which names the git configuration),
    # so only the sandbox stands between the command and the file.
    decision = _decide(_engine(ws), BASH_TOOL.definition, PermissionMode.YOLO, command=command)
    if route == "git config":
        assert decision.verdict == "ask" and ".git/config" in decision.warning
        if name == ".git/config":
            return  # allowed after that prompt: the file it names is writable
    else:
        assert decision.verdict == "allow", decision
    before = _snapshot(ws)
    done = subprocess.run(
        build_argv(ws, ["bash", "-c", command], roots=[ws]), cwd=ws, capture_output=True,
        text=True, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert _snapshot(ws) == before, done.stderr
    assert done.returncode != 0
    # The same command that names the file was asked for, and may then change it.
    named = ROUTES[route].format(f=name)
    if not (ws / name).parent.exists():
        named = f"mkdir -p {Path(name).parent} && {named}"
    subprocess.run(
        build_argv(ws, ["bash", "-c", named], roots=[ws]), cwd=ws, capture_output=True,
        check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert os.path.lexists(ws / name)


@pytest.mark.sandbox
def test_a_new_hook_cannot_be_made_and_the_git_dir_cannot_be_moved(ws: Path) -> None:
    from plan_lsp.policy.sandbox.bwrap import build_argv, bwrap_path

    need(bwrap_path() is not None, "bubblewrap is not installed")
    command = (
        "d=$(printf .gi%s t); cd $d/hooks; cp ../../payload.sh post-merge; cd ../..; "
        "mv $d g2; git status --porcelain --untracked-files=all"
    )
    done = subprocess.run(
        build_argv(ws, ["bash", "-c", command], roots=[ws]), cwd=ws, capture_output=True,
        text=True, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert not (ws / ".git" / "hooks" / "post-merge").exists()
    assert (ws / ".git").is_dir() and not (ws / "g2").exists()
    assert "busy" in done.stderr.lower()
    # Placeholders are invisible to git and gone afterwards.
    assert ".idea" not in done.stdout and ".nvim.lua" not in done.stdout, done.stdout
    assert not (ws / ".idea").exists() and not (ws / ".nvim.lua").exists()


# Files in a git directory that move where git finds its configuration and hooks, and the
# git entries of a repository below the root (`vendor/.git`).
MOVERS = (
    ".git/commondir", ".git/config.worktree", ".git/worktrees/w/gitdir",
    ".git/worktrees/w/config.worktree", ".git/modules/a/b/config", "vendor/.git",
    "vendor/.git/config", "vendor/.git/hooks/pre-commit", "a/b/.git/info/attributes",
)  # fmt: skip


@pytest.mark.parametrize("name", MOVERS)
@pytest.mark.parametrize("tool", sorted(EDITORS))
def test_files_that_move_the_repository_ask_in_every_mode(ws: Path, name: str, tool: str) -> None:
    for mode in MODES:
        decision = _decide(_engine(ws), EDITORS[tool], mode, **_edit_args(tool, name))
        assert decision.verdict == "ask", (mode, decision)
        assert "runs code later" in decision.warning


@pytest.mark.parametrize(
    "command",
    ["echo ../evil > .git/commondir", "git init vendor", "git clone ../other vendor",
     "git worktree add ../w", "printf x >> vendor/.git/config"],
)  # fmt: skip
def test_shell_commands_that_make_or_move_a_repository_ask(ws: Path, command: str) -> None:
    decision = _decide(_engine(ws), BASH_TOOL.definition, PermissionMode.YOLO, command=command)
    assert decision.verdict == "ask", decision


def _leads(ws: Path) -> None:
    """A hook kept under version control (`.git/hooks/pre-commit` a link to it) and a shared
    configuration the repository's includes: ordinary files that protected ones lead to."""
    (ws / "scripts").mkdir()
    (ws / "scripts" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    (ws / ".git" / "hooks" / "pre-commit").symlink_to("../../scripts/pre-commit")
    (ws / "gitconfig.shared").write_text("[alias]\n\tst = status\n")
    (ws / "hooks.shared").mkdir()
    (ws / "inc2").write_text("[core]\n\thooksPath = hooks.shared\n")
    with (ws / ".git" / "config").open("a") as config:
        config.write("[include]\n\tpath = ../gitconfig.shared\n"
                     '[includeIf "gitdir:/"]\n\tpath = ../inc2\n')  # fmt: skip


@pytest.mark.parametrize("name", ["scripts/pre-commit", "gitconfig.shared", "inc2",
                                  "hooks.shared/post-merge"])  # fmt: skip
def test_a_file_a_protected_one_leads_to_asks(ws: Path, name: str) -> None:
    _leads(ws)
    for tool in sorted(EDITORS):
        decision = _decide(
            _engine(ws), EDITORS[tool], PermissionMode.YOLO, **_edit_args(tool, name)
        )
        assert decision.verdict == "ask", (tool, decision)
        assert "a protected file leads here" in decision.warning
    hits = command_hits(f"printf x >> {name}", [ws])
    assert hits and "leads here" in hits[0].warning
    assert protected("scripts/other", [ws]) == []


@pytest.mark.sandbox
def test_the_build_sandbox_keeps_what_protected_files_lead_to(ws: Path) -> None:
    from plan_lsp.policy.sandbox.bwrap import build_argv, bwrap_path

    need(bwrap_path() is not None, "bubblewrap is not installed")
    _leads(ws)
    command = "d=scri; printf evil >> ${d}pts/pre-commit; g=gitconfig; printf evil >> $g.shared"
    decision = _decide(_engine(ws), BASH_TOOL.definition, PermissionMode.YOLO, command=command)
    assert decision.verdict == "allow", decision  # the names are hidden: the sandbox is the wall
    before = _snapshot(ws)
    subprocess.run(build_argv(ws, ["bash", "-c", command], roots=[ws]), cwd=ws,
                   capture_output=True, check=False, stdin=subprocess.DEVNULL)  # fmt: skip
    assert _snapshot(ws) == before


@pytest.mark.sandbox
def test_a_commondir_the_command_makes_is_removed_after_it(ws: Path) -> None:
    """git dies on a folder named `commondir`, so no placeholder can hold the place: what a
    command whose words do not name it makes there is removed when it ends, and it says so."""
    from plan_lsp.policy.sandbox.bwrap import build_argv, bwrap_path

    need(bwrap_path() is not None, "bubblewrap is not installed")
    command = "d=.gi; mkdir -p evil; echo ../evil > ${d}t/commondir; cat ${d}t/commondir"
    decision = _decide(_engine(ws), BASH_TOOL.definition, PermissionMode.YOLO, command=command)
    assert decision.verdict == "allow", decision
    argv = build_argv(ws, ["bash", "-c", command], roots=[ws])
    done = subprocess.run(argv, cwd=ws, capture_output=True, text=True, check=False,
                          stdin=subprocess.DEVNULL)  # fmt: skip
    assert "../evil" in done.stdout  # it was made inside the command...
    assert not os.path.lexists(ws / ".git" / "commondir")  # ...and is gone after it
    assert "removed" in done.stderr and "commondir" in done.stderr
