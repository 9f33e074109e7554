"""Hostile repositories for the red-team tests, built with the real git."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from tests.e2e.scripts import scripted_args, write_script
from tests.lsp_harness import Editor, running_server
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


@asynccontextmanager
async def build_mode_server(
    tmp_path: Path, ws: Path, server_args: list[str], env: Mapping[str, str] | None = None
) -> AsyncIterator[Editor]:
    """A server whose user configuration opens it in build mode, with a user who answers
    "Allow always" to every permission prompt."""
    user_config = tmp_path / "user.toml"
    user_config.write_text('mode = "build"\n')
    env = {"PLAN_LSP_CONFIG": str(user_config), **(env or {})}
    async with running_server([ws], *server_args, env=env) as ed:
        ed.ed.answer_permission = lambda p: "allow_always"
        ed.ed.answer_message = lambda p: "Allow always"
        yield ed


# README "MCP servers": the reference git server and the tools it lists as read-only.
README_READ_ONLY = ["git_status", "git_diff_unstaged", "git_diff_staged", "git_diff", "git_log",
                    "git_show"]  # fmt: skip


def readme_git_mcp_config(path: Path) -> Path:
    """A user configuration with `mcp-server-git` configured exactly as the README shows
    (the interpreter running the tests instead of `python`)."""
    path.write_text(
        "[[mcp.servers]]\n"
        'name = "git"\n'
        f"command = {json.dumps([sys.executable, '-m', 'mcp_server_git', '--repository', '.'])}\n"
        f"read_only_tools = {json.dumps(README_READ_ONLY)}\n"
    )
    return path


async def plan_mode_git_mcp_call(
    tmp_path: Path, ws: Path, tool: str, **arguments: Any
) -> list[dict[str, Any]]:
    """One plan-mode session on `ws` with the README's `mcp-server-git`, in which the model
    calls `mcp__git__<tool>(**arguments)`; the MCP tool results."""
    config = readme_git_mcp_config(tmp_path / "user.toml")
    script = one_call_script(tmp_path, f"mcp__git__{tool}", **arguments)
    async with running_server(
        [ws], *scripted_args(script), env={"PLAN_LSP_CONFIG": str(config)}
    ) as ed:
        assert (await ed.state())["mode"] == "plan"
        await ed.request("planLsp/prompt", {"text": f"run {tool}"}, timeout=120)
        return [u for u in ed.updates_of("toolResult") if u["tool"].startswith("mcp__")]
