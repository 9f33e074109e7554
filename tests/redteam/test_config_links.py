"""A repository's `.plan-lsp/config.toml` is read with a plain `open()`: it may be a
symbolic link (git stores links) to anything on the machine. "The server never dies from
input and never waits forever" (working rules)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from tests.e2e.scripts import sample_project, scripted_args, write_script
from tests.lsp_harness import running_server


async def test_workspace_config_linked_to_stdin_does_not_hang_the_server(tmp_path: Path) -> None:
    """Attacker: commits `.plan-lsp/config.toml` as a symbolic link to `/dev/stdin`. The
    server is started on stdio (every editor does), so reading the workspace configuration
    reads the LSP stream itself, blocking the event loop until the editor closes it.

    Should: a link (or anything but a regular file) as the workspace configuration is
    refused with a warning, like the server's other files. Today: the server answers
    nothing after `initialized`."""
    ws = sample_project(tmp_path / "ws")
    (ws / ".plan-lsp").mkdir()
    os.symlink("/dev/stdin", ws / ".plan-lsp" / "config.toml")
    script = write_script(tmp_path / "script.json", [{"text": "hello"}])
    async with running_server([ws], *scripted_args(script)) as ed:
        try:
            state = await ed.request("planLsp/state", {}, timeout=10)
        except TimeoutError:
            pytest.fail("the server stopped answering: it reads its own LSP input as config")
        assert state["mode"] == "plan"
        # a second request, so a swallowed first message cannot pass by luck
        assert (await asyncio.wait_for(ed.state(), 10))["mode"] == "plan"
