"""The user's shell settings reach the commands, through the real server: `planNetwork`
lets plan-mode commands use the network (off by default), and a read a build-mode gate lets run
without asking runs as a plan-mode read would (no repository program runs behind it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from plan_lsp.policy.sandbox import sandbox_kind
from tests.e2e.scripts import sample_project, write_script
from tests.lsp_harness import running_server
from tests.needs import need
from tests.sandbox_support import Listener


@pytest.mark.parametrize("network", [False, True])
async def test_plan_network_setting_reaches_sandboxed_commands(
    tmp_path: Path, network: bool
) -> None:
    need(sandbox_kind() is not None, "no working sandbox (bubblewrap) on this machine")
    ws = sample_project(tmp_path / "ws")
    listener = Listener()
    # The interpreter itself, not the venv's link to it: a checkout in /tmp or a home is
    # hidden in the sandbox, the interpreter (a system or toolchain path) is not.
    python = os.path.realpath(sys.executable)
    connect = (
        f"{python} -c \"import socket; socket.create_connection(('127.0.0.1', "
        f"{listener.port}), timeout=3); print('connected')\""
    )
    script = write_script(
        tmp_path / "s.json",
        [{"tool_calls": [{"name": "bash", "arguments": {"command": connect}}]}, {"text": "ok"}],
    )
    user = tmp_path / "user.toml"
    user.write_text(f"plan_network = {str(network).lower()}\n")
    try:
        async with running_server(
            [ws], "--provider", "scripted", "--script", str(script),
            env={"PLAN_LSP_CONFIG": str(user)},
        ) as ed:  # fmt: skip
            assert (await ed.settled_state())["planShell"] == "sandboxed"
            await ed.request("planLsp/prompt", {"text": "check the port"})
            result = next(u for u in ed.updates_of("toolResult") if u["tool"] == "bash")
    finally:
        listener.close()
    assert ("connected" in result["content"]) is network, result["content"]
    assert (listener.connections > 0) is network


async def test_an_unasked_read_in_build_mode_runs_no_repository_program(tmp_path: Path) -> None:
    ws = sample_project(tmp_path / "ws")
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    marker = tmp_path / "fsmonitor-ran"
    hook = tmp_path / "fsmonitor.sh"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    subprocess.run(["git", "config", "core.fsmonitor", str(hook)], cwd=ws, check=True)
    # The repository's program runs for a plain `git status` outside plan-lsp:
    subprocess.run(["git", "status", "--short"], cwd=ws, check=True, capture_output=True)
    assert marker.exists()
    marker.unlink()
    script = write_script(
        tmp_path / "s.json",
        [
            {"tool_calls": [{"name": "bash", "arguments": {"command": "git status --short"}}]},
            {"text": "ok"},
        ],
    )
    async with running_server(
        [ws], "--provider", "scripted", "--script", str(script), "--plan-shell", "classified"
    ) as ed:
        await ed.request("planLsp/setMode", {"mode": "build"})
        await ed.request("planLsp/prompt", {"text": "what changed?"})
        assert ed.ed.permission_requests == [] and ed.ed.message_requests == []
        result = next(u for u in ed.updates_of("toolResult") if u["tool"] == "bash")
    assert not result["isError"], result["content"]
    assert "hello.py" in result["content"]
    assert not marker.exists(), "the repository's core.fsmonitor ran behind an unasked read"
