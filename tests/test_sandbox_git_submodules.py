"""git runs git in other repositories: a submodule's `status` when it is dirty, `diff
--submodule=diff`, `submodule foreach`, a `.gitmodules` saying `ignore = none`. Such a child
git is found through git's exec path, not PATH, and reads the submodule's own `.git/config`.

The class is closed twice: every child git is the shim again (git's exec path is a mirror of
git-core whose `git` is the shim), and the `classified` allow-list refuses the options that
make git look into submodules. This table runs each invocation through the shim alone (no
gate), in bubblewrap and in Landlock, in a repository whose submodule and parent configuration
name programs for every hook git offers on a read."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from plan_lsp.policy.shell import classify_command
from tests.redteam._repos import git, repo_with_hostile_submodule
from tests.test_sandbox_git import Runner, runner  # noqa: F401  (fixture)

# (command, allowed under `classified`, a line its output must contain or "")
TABLE: list[tuple[str, bool, str]] = [
    ("git status", True, "modified:   sub"),
    ("git status --short", True, ""),
    ("git status --porcelain=v2", True, ""),
    ("git status --ignore-submodules=none", False, "modified content"),
    ("git status --ignore-submodules=untracked", False, ""),
    ("git diff", True, ""),
    ("git diff --stat", True, ""),
    ("git diff HEAD", True, ""),
    ("git diff --ignore-submodules=none", False, "-dirty"),
    ("git diff --ignore-submodules=none --submodule=diff", False, "+changed"),
    ("git diff --ignore-submodules=none --submodule=log", False, ""),
    ("git diff --ignore-submodules=none --submodule=short", False, ""),
    ("git diff --submodule=short", True, ""),
    ("git diff-files --ignore-submodules=none", False, ""),
    ("git diff-index HEAD --ignore-submodules=none", False, ""),
    ("git log -p -1 --submodule=diff", False, ""),
    ("git show --submodule=diff", False, ""),
    ("git -C sub status", True, "modified:   file.txt"),
    ("git -C sub diff", True, "+changed"),
    ("git -C sub log -p", True, "+data"),
    ("git -C sub show", True, "+data"),
    ("git -C sub blame file.txt", True, "data"),
    ("git -C sub grep -n data", True, "file.txt:1:data"),
    ("git submodule status", False, "sub"),
    ("git submodule foreach git diff", False, "+changed"),
    ("git grep --recurse-submodules data", False, ""),
    ("git ls-files --recurse-submodules", False, ""),
    ("git describe --always --dirty", False, ""),
]


def _hostile(tmp_path: Path) -> tuple[Path, Path]:
    """The red-team repository (a submodule whose `.git/config` names a clean filter and a
    textconv driver), made worse: the submodule also names an fsmonitor, an external diff,
    a pager, a filter process and hooks; the parent's `.gitmodules` says `ignore = none`
    (plain `git status` and `git diff` look inside), its `.git/config` asks for inline
    submodule diffs and a submodule summary in `status`."""
    canary = tmp_path / "canary"
    canary.mkdir()
    ws = repo_with_hostile_submodule(tmp_path / "ws", canary / "filter")
    sub = ws / "sub"
    touch = f"touch {canary}/"
    for key, value in (
        ("core.fsmonitor", f"sh -c '{touch}fsmonitor; exit 1'"),
        ("diff.external", f"sh -c '{touch}external'"),
        ("core.pager", f"sh -c '{touch}pager; cat'"),
        ("filter.x.process", f"sh -c '{touch}process; exit 1'"),
        ("core.hooksPath", str(sub / "hooks")),
    ):
        git(sub, "config", key, value)
    (sub / "hooks").mkdir()
    for hook in ("post-checkout", "pre-commit", "post-index-change", "reference-transaction"):
        for hooks in (sub / "hooks", sub / ".git" / "hooks"):
            (hooks / hook).write_text(f"#!/bin/sh\n{touch}hook-{hook}\n")
            (hooks / hook).chmod(0o755)
    (ws / ".gitmodules").write_text(
        '[submodule "sub"]\n\tpath = sub\n\turl = ./sub\n\tignore = none\n'
    )
    git(ws, "add", ".gitmodules")
    git(ws, "commit", "-qm", "gitmodules")
    git(ws, "config", "diff.submodule", "diff")
    git(ws, "config", "status.submoduleSummary", "true")
    return ws, canary


def test_the_allow_list_refuses_what_looks_into_submodules(tmp_path: Path) -> None:
    ws, _ = _hostile(tmp_path)
    wrong = []
    for command, allowed, _ in TABLE:
        verdict = classify_command(command, protection="classified", roots=[ws], cwd=ws)
        if verdict.allowed != allowed:
            wrong.append(f"{command}: allowed={verdict.allowed} {verdict.reasons}")
    assert wrong == []


async def test_no_git_anywhere_runs_a_program_of_the_submodule(
    runner: Runner,  # noqa: F811
    tmp_path: Path,
) -> None:
    """Every invocation of the table, allowed or not, through the bare shim (the gate is
    not asked): git's own child gits in the submodule run none of its programs either, and
    the reads still work (a child git really ran where the output says so)."""
    ws, canary = _hostile(tmp_path)
    failures = []
    for command, _, expected in TABLE:
        result = await runner(command, ws)
        data = result.data or {}
        out, err = str(data.get("stdout", "")), str(data.get("stderr", ""))
        ran = sorted(p.name for p in canary.iterdir())
        if ran:
            failures.append(f"{command} ran {ran}")
            for p in canary.iterdir():
                p.unlink()
        if "hardened exec path" in err or expected not in out:
            failures.append(f"{command}: exit {data.get('exit_code')}: {out[-200:]} {err[-300:]}")
    assert failures == []


def test_control_plain_git_runs_them(tmp_path: Path) -> None:
    """Without the shim the same repository runs the submodule's programs on a plain
    `git status`: the table above would see it."""
    ws, canary = _hostile(tmp_path)
    subprocess.run(["git", "status"], cwd=ws, capture_output=True, timeout=30, check=False)
    assert sorted(p.name for p in canary.iterdir()), "the hostile repository is not hostile"


@pytest.mark.parametrize("command", ["git --exec-path", "git version"])
async def test_the_exec_path_is_the_mirror(command: str, tmp_path: Path) -> None:
    from plan_lsp.policy.sandbox import git_shim
    from plan_lsp.tools.bash import run_shell

    shim = git_shim()
    assert shim is not None
    result = await run_shell(command, tmp_path, 30, False, None, profile="plan")
    assert result.data is not None and result.data["exit_code"] == 0
    if command == "git --exec-path":
        assert result.data["stdout"].strip() == str(shim.exec_dir)
        assert (shim.exec_dir / "git").resolve() == (shim.bin / "git").resolve()
