"""The `bash` tool and its runner: output, exit codes, limits, cancellation, hardening."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

import plan_lsp.tools.bash as bash_mod
from plan_lsp.policy.ports import FileEdit, PermissionAnswer, PermissionRequest
from plan_lsp.policy.safety import Safety
from plan_lsp.policy.sandbox import sandbox_kind
from plan_lsp.tools.base import Question, ToolContext
from plan_lsp.tools.bash import BASH_TOOL, OUTPUT_CAP_CHARS, run_shell


class FakeEditor:
    def open_document_text(self, path: Path) -> str | None:
        return None

    async def apply_to_open_document(self, edit: FileEdit) -> bool:
        return False


class FakeUser:
    async def request_permission(self, request: PermissionRequest) -> PermissionAnswer:
        return "reject_once"

    async def ask_questions(
        self, run_id: str, questions: list[Question]
    ) -> dict[str, list[str]] | None:
        return None


def _ctx(workspace: Path, sandbox: bool = False) -> ToolContext:
    events: list[tuple[str, dict[str, Any]]] = []
    return ToolContext(
        workspace_roots=[workspace],
        plans_dir=workspace / ".plans",
        run_id="run-1",
        editor=FakeEditor(),
        user=FakeUser(),
        emit=lambda kind, payload: events.append((kind, payload)),
        sandbox_shell=sandbox,
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it is dead for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_definition() -> None:
    d = BASH_TOOL.definition
    assert d.name == "bash" and BASH_TOOL.name == "bash"
    assert d.safety is Safety.SIDE_EFFECT
    assert d.classified_per_call is True
    assert d.input_schema["required"] == ["command"]
    assert set(d.input_schema["properties"]) == {"command", "timeout_s"}
    assert d.timeout_s > bash_mod.MAX_TIMEOUT_S


async def test_exit_code_stdout_stderr_and_cwd(tmp_path: Path) -> None:
    (tmp_path / "marker.txt").write_text("x")
    result = await BASH_TOOL.run({"command": "ls; echo oops >&2; exit 3"}, _ctx(tmp_path))
    assert not result.is_error
    assert result.data is not None
    assert result.data["exit_code"] == 3
    assert "marker.txt" in result.data["stdout"]
    assert result.data["stderr"].strip() == "oops"
    assert "exit code: 3" in result.content and "oops" in result.content


async def test_invalid_arguments(tmp_path: Path) -> None:
    assert (await BASH_TOOL.run({"command": ""}, _ctx(tmp_path))).is_error
    assert (await BASH_TOOL.run({"command": "ls", "timeout_s": "x"}, _ctx(tmp_path))).is_error
    assert (await BASH_TOOL.run({"command": "ls", "timeout_s": -1}, _ctx(tmp_path))).is_error


async def test_output_keeps_head_and_tail(tmp_path: Path) -> None:
    result = await run_shell("seq 1 200000", tmp_path, 30, False, None)
    assert result.data is not None
    out = result.data["stdout"]
    assert result.data["truncated"] is True
    assert out.startswith("1\n2\n3\n")
    assert out.rstrip().endswith("199999\n200000")
    assert "cut from the middle" in out
    assert len(out) < OUTPUT_CAP_CHARS + 200


async def test_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    result = await run_shell(
        f"sleep 60 & echo $! > {pidfile}; setsid sleep 60 & echo $! >> {pidfile}; wait",
        tmp_path,
        0.5,
        False,
        None,
    )
    assert result.is_error and result.data is not None
    assert result.data["error"] == "timeout"
    pids = [int(p) for p in pidfile.read_text().split()]
    assert len(pids) == 2
    for _ in range(100):
        if not any(_alive(p) for p in pids):
            break
        await asyncio.sleep(0.02)
    assert not any(_alive(p) for p in pids)


async def test_cancel_kills_promptly(tmp_path: Path) -> None:
    cancel = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.call_later(0.3, cancel.set)
    started = loop.time()
    result = await run_shell("sleep 60", tmp_path, 60, False, cancel)
    assert loop.time() - started < 5
    assert result.is_error and result.data is not None
    assert result.data["error"] == "cancelled"


async def test_background_leftovers_are_killed_after_exit(tmp_path: Path) -> None:
    pidfile = tmp_path / "bg.pid"
    result = await run_shell(
        f"sleep 60 > /dev/null 2>&1 & echo $! > {pidfile}", tmp_path, 10, False, None
    )
    assert not result.is_error
    pid = int(pidfile.read_text())
    for _ in range(100):
        if not _alive(pid):
            break
        await asyncio.sleep(0.02)
    assert not _alive(pid)


async def test_git_runs_hardened(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(
        ["git", "-C", str(tmp_path), "config", "core.pager", "touch pager-ran; cat"], check=True
    )
    subprocess.run(
        ["git", "-C", str(tmp_path), "config", "core.fsmonitor", "touch fsmonitor-ran; true"],
        check=True,
    )
    result = await run_shell(
        "git config core.pager; git config core.fsmonitor; echo $GIT_OPTIONAL_LOCKS; "
        "echo $GIT_TERMINAL_PROMPT; git -p status > /dev/null; git status --short",
        tmp_path,
        30,
        False,
        None,
    )
    assert result.data is not None
    lines = result.data["stdout"].split("\n")
    assert lines[:4] == ["cat", "false", "0", "0"]
    assert not (tmp_path / "pager-ran").exists()
    assert not (tmp_path / "fsmonitor-ran").exists()


async def test_bash_env_is_not_sourced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rc = tmp_path / "rc.sh"
    rc.write_text(f"touch {tmp_path}/sourced\n")
    monkeypatch.setenv("BASH_ENV", str(rc))
    await run_shell("true", tmp_path, 10, False, None)
    assert not (tmp_path / "sourced").exists()


async def test_sandbox_requested_but_missing_refuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bash_mod, "sandbox_kind", lambda: None)
    result = await BASH_TOOL.run({"command": f"touch {tmp_path}/x"}, _ctx(tmp_path, sandbox=True))
    assert result.is_error and result.data is not None
    assert result.data["error"] == "sandbox_unavailable"
    assert not (tmp_path / "x").exists()


@pytest.mark.skipif(sandbox_kind() is None, reason="bubblewrap is not available here")
async def test_sandboxed_run_cannot_write(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("content\n")
    result = await BASH_TOOL.run(
        {"command": "cat a.txt; touch b.txt"}, _ctx(tmp_path, sandbox=True)
    )
    assert result.data is not None
    assert result.data["sandboxed"] is True
    assert "content" in result.data["stdout"]
    assert "Read-only file system" in result.data["stderr"]
    assert not (tmp_path / "b.txt").exists()


def test_model_credentials_never_reach_commands() -> None:
    from plan_lsp.tools.bash import shell_env

    env = shell_env(
        {"OPENAI_API_KEY": "sk-1", "ANTHROPIC_API_KEY": "a", "PLAN_LSP_API_KEY": "k", "HOME": "/h"}
    )
    assert "OPENAI_API_KEY" not in env and "ANTHROPIC_API_KEY" not in env
    assert "PLAN_LSP_API_KEY" not in env and env["HOME"] == "/h"
