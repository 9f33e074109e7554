"""The read-only file tools against a hostile repository: reads must stay inside the
workspace (`read_file` is confined to the workspace; `tools/paths.py`)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from plan_lsp.core.plain_ports import NoEditor
from plan_lsp.policy.ports import PermissionRequest
from plan_lsp.protocol.state import Question
from plan_lsp.tools import fs
from plan_lsp.tools.base import ToolContext
from plan_lsp.tools.grep import grep

SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- redteam-secret-7f3a"


class _User:
    async def request_permission(self, request: PermissionRequest) -> str:
        return "reject_once"

    async def ask_questions(self, run_id: str, questions: list[Question]) -> None:
        return None


def _context(ws: Path) -> ToolContext:
    return ToolContext(
        workspace_roots=[ws],
        plans_dir=ws / ".plan-lsp" / "plans",
        run_id="redteam",
        editor=NoEditor(),
        user=_User(),  # type: ignore[arg-type]
        emit=lambda kind, payload: None,
    )


async def test_grep_without_ripgrep_does_not_follow_symlinks_out_of_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attacker: the repository commits a symbolic link `docs/key.txt -> ~/.ssh/id_ed25519`
    (git stores links), and the injected model calls `grep {"pattern": "PRIVATE KEY"}`.

    Should: the link is skipped like `glob` skips it and `read_file` refuses it (it points
    outside the workspace). Today: on a machine without ripgrep (the tool's documented
    fallback) the pure-Python search follows the link and returns the key's lines, which
    travel to the model provider."""
    secret_home = tmp_path / "home" / ".ssh"
    secret_home.mkdir(parents=True)
    (secret_home / "id_ed25519").write_text(SECRET + "\n")
    ws = (tmp_path / "ws").resolve()
    (ws / "docs").mkdir(parents=True)
    (ws / "README.md").write_text("# project\n")
    os.symlink(secret_home / "id_ed25519", ws / "docs" / "key.txt")
    monkeypatch.setattr("shutil.which", lambda name: None)  # no ripgrep on this machine
    ctx = _context(ws)

    refused = await fs.read_file({"path": "docs/key.txt"}, ctx)
    assert refused.is_error  # the direct read is refused, as designed

    result = await grep({"pattern": "PRIVATE KEY"}, ctx)
    assert SECRET not in result.content, (
        f"grep leaked a file outside the workspace:\n{result.content}"
    )


async def test_read_file_on_a_fifo_does_not_exhaust_the_server(tmp_path: Path) -> None:
    """Attacker: the repository (an unpacked archive, a build artefact) holds named pipes;
    the injected model calls `read_file` on them a few times.

    Should: a FIFO is refused like a directory or a binary file ("not a regular file"),
    at once. Today: `looks_binary` opens it in a worker thread that blocks forever; the
    tool's timeout abandons the call but not the thread, so each call permanently takes one
    of the default executor's few threads (min(32, CPUs + 4)), after which every
    `asyncio.to_thread` in the server (all file tools) waits forever."""
    ws = (tmp_path / "ws").resolve()
    ws.mkdir()
    os.mkfifo(ws / "pipe.md")
    ctx = _context(ws)
    try:
        result = await asyncio.wait_for(fs.read_file({"path": "pipe.md"}, ctx), 5)
    except TimeoutError:
        # unblock the stuck thread so the test process can end
        fd = os.open(ws / "pipe.md", os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        pytest.fail("read_file on a FIFO blocked (a worker thread is stuck until a writer comes)")
    assert result.is_error
