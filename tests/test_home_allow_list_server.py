"""Through the real server: the user opens the home as the workspace; the (scripted) model,
in plan mode, runs shell commands and calls the file tools that would print the home's
credentials. Under bubblewrap, Landlock and `classified`, no canary (one lies in the server's
own state folder) comes back, while the project's file does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.scripts import write_script
from tests.lsp_harness import running_server
from tests.sandbox_support import require
from tests.test_home_allow_list import CANARY, PROJECT, SECRETS, _canary, make_home

BASH = [
    "cat .pgpass .ssh/id_ed25519 .config/git/credentials .config/some-new-tool/token",
    "grep -r CANARY .",
    "grep -r CANARY",
    "rg --hidden CANARY",
    "find . -type f -newer src/app.py",
    "cat .*/*",
    "cat src/app.py",
]
FILE_TOOLS: list[tuple[str, dict[str, Any]]] = [
    ("read_file", {"path": ".pgpass"}),
    ("read_file", {"path": ".config/gh/hosts.yml"}),
    ("read_file", {"path": ".local/state/plan-lsp/state-key"}),
    ("grep", {"pattern": "CANARY"}),
    ("glob", {"pattern": "**/*credentials*"}),
    ("list_dir", {"path": ".config"}),
]


@pytest.mark.parametrize(
    ("sandbox", "plan_shell"),
    [("bubblewrap", "sandboxed"), ("landlock", "sandboxed"), ("none", "classified")],
)
async def test_the_homes_secrets_stay_hidden_from_a_plan_mode_model(
    sandbox: str, plan_shell: str, tmp_path: Path
) -> None:
    if sandbox != "none":
        require(sandbox)  # type: ignore[arg-type]
    home = make_home(tmp_path)
    calls = [{"name": "bash", "arguments": {"command": c}} for c in BASH]
    calls += [{"name": n, "arguments": a} for n, a in FILE_TOOLS]
    script = write_script(tmp_path / "script.json", [{"tool_calls": calls}, {"text": "done"}])
    env = {"HOME": str(home), "XDG_STATE_HOME": "", "XDG_CONFIG_HOME": ""}
    if sandbox != "none":
        env["PLAN_LSP_SANDBOX"] = sandbox
    args = ["--provider", "scripted", "--script", str(script), "--plan-shell", plan_shell]
    async with running_server([home], *args, env=env) as ed:
        assert (await ed.state())["mode"] == "plan"
        await ed.request("planLsp/prompt", {"text": "look around"}, timeout=120)
        results = ed.updates_of("toolResult")
    assert len(results) == len(calls), [r.get("tool") for r in results]
    text = json.dumps(results)
    leaked = sorted(rel for rel in SECRETS if _canary(rel) in text)
    assert CANARY + "-" not in text, leaked
    # The server keeps its state in that folder (XDG_STATE_HOME unset): the canary there
    # stands for another workspace's state.
    state = home / ".local" / "state" / "plan-lsp"
    assert list(state.glob("*/state.db")), "the server keeps no state in the home"
    assert PROJECT in text
