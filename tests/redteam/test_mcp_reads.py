"""MCP tools the user marked read-only run in plan mode with no confinement at all: no
sandbox, no git shim, the user's full rights (`tools/mcp/`). README "MCP servers" recommends
exactly this configuration for the reference `mcp-server-git`
(`read_only_tools = ["git_status", "git_diff_unstaged", …]`), which runs the real git in the
workspace — and a hostile repository's `.git/config` makes git run its programs
(docs/security.md §6, the table the git shim exists for)."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.scripts import sample_project
from tests.redteam._repos import git, plan_mode_git_mcp_call


async def test_readme_git_mcp_status_runs_the_repositorys_fsmonitor(tmp_path: Path) -> None:
    """Attacker: the repository's `.git/config` sets `core.fsmonitor` to a program (git runs
    it on every index refresh). The user configured `mcp-server-git` exactly as the README
    shows. In plan mode the injected model calls `mcp__git__git_status`.

    Should: nothing of the repository runs in plan mode (the plan-mode shell gets the git
    shim and the sandbox for this very reason). Today: the MCP server runs `git status`
    unconfined and the repository's program creates the canary outside the workspace."""
    canary = tmp_path / "canary" / "PWNED"
    canary.parent.mkdir()
    ws = sample_project(tmp_path / "ws")
    git(ws, "init", "-q", "-b", "main", ".")
    (ws / ".gitignore").write_text(".plan-lsp/\n")
    git(ws, "add", ".")
    git(ws, "commit", "-qm", "initial")
    git(ws, "config", "core.fsmonitor", f"sh -c 'touch {canary}; exit 1'")
    results = await plan_mode_git_mcp_call(tmp_path, ws, "git_status", repo_path=str(ws))
    assert results and not results[0]["isError"], results
    assert not canary.exists(), (
        "a program named by the repository's .git/config ran in plan mode through the "
        "read-only MCP tool git_status"
    )
