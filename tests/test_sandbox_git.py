"""git in plan mode works on a dirty tree and runs none of the programs a hostile
repository's configuration, attributes and hooks name: without a sandbox (the shim alone),
in bubblewrap and in Landlock. And what the shim cannot neutralise is reported."""

from __future__ import annotations

import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

import plan_lsp.tools.bash as bash_mod
from plan_lsp.policy.sandbox import SandboxStatus, git_config_hazards
from plan_lsp.tools.base import ToolResult
from plan_lsp.tools.bash import run_shell
from tests.sandbox_support import require
from tests.shell_attacks.harness import build_template

Runner = Callable[[str, Path], Awaitable[ToolResult]]

# command → a line its output must contain (the command really worked).
READS = {
    "git status": "modified:   README.md",
    "git status --short": " M README.md",
    "git diff": "+alpha beta gamma delta",
    "git diff HEAD": "+5,6",
    "git diff --stat": "README.md",
    "git diff --cached": "+5,6",
    "git log -p -2": "+    return 43",
    "git show": "+    return 43",
    "git show HEAD:blob.bin": "binary-ish",
    "git log --oneline --all --decorate": "v1.0",
    "git blame README.md": "alpha",
    "git blame blob.bin": "binary-ish",
    "git grep -n alpha": "README.md:3:alpha",
    "git -p log -1 --format=%s": "second",
    "git -C src log -1 --format=%s": "second",
    "git branch -a": "feature",
    "git ls-files": "src/util.sh",
    "git stash list && echo listed": "listed",
}


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[Path, Path]:
    canary = tmp_path / "canary"
    canary.mkdir()
    repo = tmp_path / "repo"
    build_template(repo, canary, tmp_path / "home")
    return repo, canary


async def _classified(command: str, repo: Path) -> ToolResult:
    return await run_shell(command, repo, 30, False, None, profile="plan")


async def _sandboxed(command: str, repo: Path) -> ToolResult:
    return await run_shell(command, repo, 30, True, None, profile="plan")


@pytest.fixture(params=["classified", "bubblewrap", "landlock"])
def runner(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Runner:
    if request.param == "classified":
        return _classified
    require(request.param)
    monkeypatch.setattr(bash_mod, "sandbox_status", lambda: SandboxStatus(request.param, "forced"))
    return _sandboxed


def _ran(canary: Path) -> list[str]:
    return sorted(p.name for p in canary.iterdir() if p.name != "gpg")


async def test_git_reads_work_and_run_no_repository_program(
    runner: Runner, hostile: tuple[Path, Path]
) -> None:
    repo, canary = hostile
    failures = []
    for command, expected in READS.items():
        result = await runner(command, repo)
        data = result.data or {}
        out, err = str(data.get("stdout", "")), str(data.get("stderr", ""))
        if data.get("exit_code") != 0 or expected not in out:
            failures.append(f"{command}: exit {data.get('exit_code')}: {err[-300:]}")
        if "HOSTILE" in out + err:
            failures.append(f"{command} ran a repository program: {err[-300:]}")
    assert failures == []
    assert _ran(canary) == []


async def test_aliases_and_user_overrides_cannot_bring_programs_back(
    runner: Runner, hostile: tuple[Path, Path]
) -> None:
    repo, canary = hostile
    for command in (
        "git st",
        "git -c diff.evil.textconv='echo HOSTILE-user >&2; cat' log -p -1 --textconv",
        "git -c core.fsmonitor='echo HOSTILE-user >&2; false' status",
        "git diff --ext-diff",
        "git -c diff.external='echo HOSTILE-user >&2; true' diff --ext-diff",
        "git cat-file --textconv HEAD:blob.bin",
        "git cat-file --filters HEAD:README.md",
    ):
        result = await runner(command, repo)
        data = result.data or {}
        assert "HOSTILE" not in str(data.get("stdout", "")) + str(data.get("stderr", "")), command
    assert _ran(canary) == []


async def test_exec_path_is_refused(hostile: tuple[Path, Path]) -> None:
    repo, _ = hostile
    result = await _classified("git --exec-path=src status", repo)
    assert result.data is not None and result.data["exit_code"] == 128
    assert "--exec-path" in result.data["stderr"]


async def test_unreadable_configuration_stops_git(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".git" / "config").write_text("[core\nbroken")
    result = await _classified("git status", tmp_path)
    assert result.data is not None and result.data["exit_code"] == 128
    assert "could not be read" in result.data["stderr"]


def test_a_repository_the_shim_neutralises_has_no_hazards(hostile: tuple[Path, Path]) -> None:
    repo, _ = hostile
    assert git_config_hazards(repo) == []


def test_hazards_name_the_key_and_its_file(tmp_path: Path, hostile: tuple[Path, Path]) -> None:
    repo, _ = hostile

    def config(*args: str) -> None:
        subprocess.run(["git", "-C", str(repo), "config", *args], check=True)

    config("core.worktree", "/")
    config("remote.origin.vcs", "evil")
    config("foo.bar.command", "touch x")
    hazards = git_config_hazards(repo)
    config_file = f"(file:{repo / '.git' / 'config'})"
    assert any(h.startswith(f"core.worktree=/ {config_file}") for h in hazards), hazards
    assert any(h.startswith(f"remote.origin.vcs {config_file}") for h in hazards)
    assert any(h.startswith("foo.bar.command") for h in hazards)
    assert git_config_hazards(tmp_path / "not-a-repo") == []


def test_hazards_see_a_git_directory_elsewhere(tmp_path: Path, hostile: tuple[Path, Path]) -> None:
    repo, _ = hostile
    other = tmp_path / "other"
    other.mkdir()
    (other / ".git").write_text(f"gitdir: {repo / '.git'}\n")
    assert any("lies outside" in h for h in git_config_hazards(other))
    alternates = repo / ".git" / "objects" / "info" / "alternates"
    alternates.parent.mkdir(parents=True, exist_ok=True)
    alternates.write_text(f"{tmp_path / 'elsewhere' / 'objects'}\n")
    assert any("alternates" in h for h in git_config_hazards(repo))


async def test_the_shim_comes_back_when_tmp_is_cleaned(hostile: tuple[Path, Path]) -> None:
    import shutil

    from plan_lsp.policy.sandbox import git_shim_dir

    repo, _ = hostile
    shim = git_shim_dir()
    assert shim is not None
    shutil.rmtree(shim)
    result = await _classified("git status --short", repo)
    assert result.data is not None and " M README.md" in result.data["stdout"]
    assert (shim / "git").exists()
