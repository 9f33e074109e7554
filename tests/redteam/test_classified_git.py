"""`classified` (no working sandbox: the allow-list is the only wall) against a hostile
repository's git configuration. docs/security.md §6: the git shim neutralises every program
the repository's configuration names, and `git_config_hazards` refuses what it cannot.

Both look only at the configuration of the repository the command starts in. git itself
runs child `git` processes in submodules (`--submodule=diff`, `--ignore-submodules=none`),
found through git's own exec path (not the shim on PATH), reading the submodule's own
`.git/config`; only the fixed overrides travel to them (GIT_CONFIG_PARAMETERS), the
per-name ones (`filter.<name>.clean`, `diff.<name>.textconv`) do not.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.lsp_harness import running_server
from tests.redteam._repos import one_call_script, repo_with_hostile_submodule


async def test_git_diff_submodule_runs_the_submodules_clean_filter(tmp_path: Path) -> None:
    """Attacker: the repository ships a checked-out submodule whose `.git/config` names a
    clean filter (`filter.x.clean`) for a modified file; the injected model, in plan mode,
    runs `git diff --ignore-submodules=none --submodule=diff` (every word allow-listed).

    Should: the command is refused (or runs without any program of the repository). Today,
    without a sandbox, the allow-list passes it, the parent has no hazard, and git's child
    process in the submodule runs the filter: the canary file outside the repository is
    created — arbitrary code execution in plan mode."""
    canary = tmp_path / "canary" / "PWNED"
    canary.parent.mkdir()
    ws = repo_with_hostile_submodule(tmp_path / "ws", canary)
    command = "git diff --ignore-submodules=none --submodule=diff"
    script = one_call_script(tmp_path, "bash", command=command)
    user_config = tmp_path / "user.toml"
    user_config.write_text("")
    async with running_server(
        [ws],
        "--provider", "scripted", "--script", str(script), "--plan-shell", "classified",
        env={"PLAN_LSP_SANDBOX": "none", "PLAN_LSP_CONFIG": str(user_config)},
    ) as ed:  # fmt: skip
        state = await ed.state()
        assert state["mode"] == "plan" and state["sandbox"] is None
        await ed.request("planLsp/prompt", {"text": "what changed?"}, timeout=90)
        results = [u for u in ed.updates_of("toolResult") if u.get("tool") == "bash"]
    assert not canary.exists(), (
        "a program named by the submodule's git configuration ran in plan mode: "
        + json.dumps(results)[:600]
    )
