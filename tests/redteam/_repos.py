"""Hostile repositories for the red-team tests, built with the real git."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from tests.e2e.scripts import write_script
from tests.needs import need_program

_ENV = {
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_SYSTEM": "/dev/null",
    "GIT_AUTHOR_NAME": "r",
    "GIT_AUTHOR_EMAIL": "r@example.invalid",
    "GIT_COMMITTER_NAME": "r",
    "GIT_COMMITTER_EMAIL": "r@example.invalid",
    "PATH": "/usr/bin:/bin",
    "HOME": "/nonexistent",
}


def git(cwd: Path, *args: str) -> str:
    need_program("git", "the hostile repositories are real git repositories")
    proc = subprocess.run(
        ["git", *args], cwd=cwd, env=_ENV, capture_output=True, text=True, check=True, timeout=30
    )
    return proc.stdout


def repo_with_hostile_submodule(root: Path, canary: Path) -> Path:
    """A repository whose committed submodule `sub` (a gitlink, checked out with its own
    `.git`) has a clean filter and a textconv driver in its own `.git/config` that create
    `canary`, and a modified tracked file. The parent's own configuration names nothing."""
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main", ".")
    (root / "README.md").write_text("# project\n")
    sub = root / "sub"
    sub.mkdir()
    git(sub, "init", "-q", "-b", "main", ".")
    (sub / "file.txt").write_text("data\n")
    (sub / ".gitattributes").write_text("* filter=x diff=x\n")
    git(sub, "add", "-A")
    git(sub, "commit", "-qm", "sub")
    git(sub, "config", "filter.x.clean", f"sh -c 'touch {canary}; cat'")
    git(sub, "config", "diff.x.textconv", f"sh -c 'touch {canary}; cat \"$0\"'")
    with (sub / "file.txt").open("a") as handle:
        handle.write("changed\n")
    head = git(sub, "rev-parse", "HEAD").strip()
    git(root, "add", "README.md")
    git(root, "update-index", "--add", "--cacheinfo", f"160000,{head},sub")
    git(root, "commit", "-qm", "parent")
    return root


def one_call_script(tmp_path: Path, name: str, **arguments: Any) -> Path:
    """A scripted model that makes one tool call, then ends its turn."""
    turns: list[dict[str, Any]] = [
        {"tool_calls": [{"name": name, "arguments": arguments}]},
        {"text": "done"},
    ]
    return write_script(tmp_path / "script.json", turns)
