"""The sandbox self-test runs in a process of its own while the server starts: the first
`planLsp/state` answer does not wait for it (the shell protection reads "checking"), the
state is pushed once it answers, and a run started meanwhile waits for it while the server
goes on answering."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from tests.e2e.scripts import sample_project, write_script
from tests.lsp_harness import running_server

# Stands in for bubblewrap: holds every call until the test releases it, then fails, so
# the self-test ends without a sandbox (PLAN_LSP_SANDBOX=bubblewrap: nothing else is tried).
FAKE_BWRAP = """#!/bin/sh
while [ ! -e '{release}' ]; do sleep 0.01; done
exit 1
"""


def _held_bwrap(tmp_path: Path) -> tuple[dict[str, str], Path]:
    release = tmp_path / "release"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "bwrap"
    fake.write_text(FAKE_BWRAP.format(release=release))
    fake.chmod(0o755)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "PLAN_LSP_SANDBOX": "bubblewrap"}
    return env, release


async def test_state_answers_before_the_self_test_and_is_pushed_after(tmp_path: Path) -> None:
    ws = sample_project(tmp_path / "ws")
    env, release = _held_bwrap(tmp_path)
    turns = [
        {"tool_calls": [{"name": "bash", "arguments": {"command": "cat hello.py"}}]},
        {"text": "read it"},
    ]
    script = write_script(tmp_path / "s.json", turns)
    async with running_server(
        [ws], "--provider", "scripted", "--script", str(script), env=env
    ) as ed:
        state = await ed.state()
        assert state["planShell"] is None and state["sandbox"] is None
        assert state["shellProtection"].startswith("checking")

        prompt = asyncio.ensure_future(ed.request("planLsp/prompt", {"text": "read hello.py"}))
        await ed.wait_update(lambda u: u["kind"] == "state" and u["state"]["running"])
        # The run waits for the self-test (held until released); the server does not.
        assert (await ed.state())["running"] is True
        assert not prompt.done() and ed.updates_of("toolResult") == []

        release.touch()
        result = await asyncio.wait_for(prompt, 60)
        pushed = await ed.wait_update(
            lambda u: u["kind"] == "state" and u["state"]["planShell"] is not None
        )
    assert result["stopReason"] == "end_turn", result
    assert pushed["state"]["planShell"] == "classified" and pushed["state"]["sandbox"] is None
    assert "no sandbox here (no working sandbox: bubblewrap:" in pushed["state"]["shellProtection"]
    bash = next(u for u in ed.updates_of("toolResult") if u["tool"] == "bash")
    assert "print('hi')" in json.dumps(bash), bash
