"""The `bash` tool and its runner: output, exit codes, limits, cancellation, hardening."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import pytest

import plan_lsp.tools.bash as bash_mod
from plan_lsp.policy.ports import FileEdit, PermissionRequest
from plan_lsp.policy.safety import ArgumentsRefused, Safety
from plan_lsp.policy.sandbox import SandboxStatus, git_shim_dir
from plan_lsp.protocol.state import PermissionAnswer, Question, WorkMode
from plan_lsp.tools.base import ToolContext
from plan_lsp.tools.bash import BASH_TOOL, OUTPUT_CAP_CHARS, PLAN_NETWORK_KEY, run_shell
from plan_lsp.tools.edit import MODE_PROVIDER_KEY
from tests.needs import process_alive
from tests.sandbox_support import listener, require


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


def _ctx(
    workspace: Path,
    sandbox: bool = False,
    mode: WorkMode | None = WorkMode.BUILD,
    **extra: Any,
) -> ToolContext:
    """A call context; `mode` is what the runner's mode provider reports (None: no
    provider, which the tools read as plan mode)."""
    events: list[tuple[str, dict[str, Any]]] = []
    if mode is not None:
        extra[MODE_PROVIDER_KEY] = lambda: mode
    return ToolContext(
        workspace_roots=[workspace],
        plans_dir=workspace / ".plans",
        run_id="run-1",
        editor=FakeEditor(),
        user=FakeUser(),
        emit=lambda kind, payload: events.append((kind, payload)),
        sandbox_shell=sandbox,
        extra=extra,
    )


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
    with pytest.raises(ArgumentsRefused, match="timeout_s"):  # before the tool runs
        BASH_TOOL.definition.check_arguments({"command": "ls", "timeout_s": "x"})
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
        if not any(process_alive(p) for p in pids):
            break
        await asyncio.sleep(0.02)
    assert not any(process_alive(p) for p in pids)


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
        if not process_alive(pid):
            break
        await asyncio.sleep(0.02)
    assert not process_alive(pid)


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
    monkeypatch.setattr(bash_mod, "sandbox_status", lambda: SandboxStatus(None, "none here"))
    result = await BASH_TOOL.run({"command": f"touch {tmp_path}/x"}, _ctx(tmp_path, sandbox=True))
    assert result.is_error and result.data is not None
    assert result.data["error"] == "sandbox_unavailable"
    assert "none here" in result.data["message"]
    assert not (tmp_path / "x").exists()


async def test_sandboxed_run_cannot_write(tmp_path: Path) -> None:
    require("bubblewrap")
    (tmp_path / "a.txt").write_text("content\n")
    result = await BASH_TOOL.run(
        {"command": "cat a.txt; touch b.txt"}, _ctx(tmp_path, sandbox=True)
    )
    assert result.data is not None
    assert result.data["sandboxed"] is True
    assert "content" in result.data["stdout"]
    assert "Read-only file system" in result.data["stderr"]
    assert "read-only sandbox" in result.content
    assert not (tmp_path / "b.txt").exists()


async def test_plan_mode_always_uses_a_working_sandbox(tmp_path: Path) -> None:
    """Even when the gate did not ask for it (the user chose `classified`, or the session
    switched to plan mode after the gate's check)."""
    require("bubblewrap")
    for ctx in (_ctx(tmp_path, mode=WorkMode.PLAN), _ctx(tmp_path, mode=None)):
        result = await BASH_TOOL.run({"command": "touch b.txt"}, ctx)
        assert result.data is not None and result.data["sandboxed"] is True
        assert not (tmp_path / "b.txt").exists()


async def test_plan_network_setting_reaches_the_sandbox(tmp_path: Path) -> None:
    require("bubblewrap")
    script = "exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"
    with listener() as server:
        command = script.format(port=server.port)
        closed = await BASH_TOOL.run({"command": command}, _ctx(tmp_path, mode=WorkMode.PLAN))
        opened = await BASH_TOOL.run(
            {"command": command},
            _ctx(tmp_path, mode=WorkMode.PLAN, **{PLAN_NETWORK_KEY: True}),
        )
    assert closed.data is not None and "connected" not in closed.data["stdout"]
    assert opened.data is not None and "connected" in opened.data["stdout"]
    assert "no network" in closed.content and "no network" not in opened.content


async def test_build_mode_cannot_touch_the_state_directory(tmp_path: Path) -> None:
    require("bubblewrap")
    state = tmp_path / ".plan-lsp"
    state.mkdir()
    (state / "state.db").write_text("db")
    result = await BASH_TOOL.run(
        {
            "command": "echo new > new.txt; echo evil > .plan-lsp/state.db; "
            "rm -f .plan-lsp/state.db; mkdir .plan-lsp/plans; echo done"
        },
        _ctx(tmp_path, mode=WorkMode.BUILD),
    )
    assert result.data is not None and result.data["sandboxed"] is False
    assert "done" in result.data["stdout"]
    assert (tmp_path / "new.txt").read_text() == "new\n"
    assert (state / "state.db").read_text() == "db"
    assert not (state / "plans").exists()
    assert result.data["confinement"] == "build sandbox"


async def test_build_mode_creates_a_missing_state_directory_read_only(tmp_path: Path) -> None:
    require("bubblewrap")
    result = await BASH_TOOL.run(
        {"command": "mkdir -p .plan-lsp/plans && echo made"}, _ctx(tmp_path, mode=WorkMode.BUILD)
    )
    assert result.data is not None and "made" not in result.data["stdout"]
    assert (tmp_path / ".plan-lsp").is_dir()
    assert not (tmp_path / ".plan-lsp" / "plans").exists()


async def test_build_mode_without_a_sandbox_runs_plainly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bash_mod, "sandbox_status", lambda: SandboxStatus(None, "none"))
    result = await BASH_TOOL.run(
        {"command": "mkdir .plan-lsp && touch .plan-lsp/x"}, _ctx(tmp_path, mode=WorkMode.BUILD)
    )
    assert result.data is not None and result.data["exit_code"] == 0
    assert (tmp_path / ".plan-lsp" / "x").exists()


async def test_landlock_runs_get_a_private_scratch_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require("landlock")
    monkeypatch.setattr(bash_mod, "sandbox_status", lambda: SandboxStatus("landlock", "forced"))
    result = await run_shell(
        'echo $TMPDIR; echo scratch > "$TMPDIR/f" && cat "$TMPDIR/f"; touch here',
        tmp_path,
        30,
        True,
        None,
    )
    assert result.data is not None, result
    lines = result.data["stdout"].splitlines()
    assert lines[1] == "scratch"
    assert not Path(lines[0]).exists()  # removed after the command
    assert not (tmp_path / "here").exists()


async def test_classified_plan_commands_get_the_allow_list_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret")
    monkeypatch.setenv("PLAN_LSP_API_KEY", "k-secret")
    result = await run_shell("env; command -v git", tmp_path, 30, False, None, profile="plan")
    assert result.data is not None
    out = result.data["stdout"]
    assert "secret" not in out
    assert "GIT_PAGER=cat" in out
    git = out.strip().splitlines()[-1]
    assert git == str(git_shim_dir() / "git"), git


async def test_classified_plan_commands_read_no_user_configuration_and_keep_the_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user's ~/.gitconfig rewrites a remote with a token, ~/.jq defines a function:
    a classified command sees neither (a fresh, empty home), and runs under the sandbox's
    CPU, memory and file-size limits; the home is gone afterwards."""
    home, ws = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    (home / ".gitconfig").write_text(
        '[url "https://a:TOKEN-9@example.com/"]\n\tinsteadOf = https://example.com/\n'
    )
    (home / ".jq").write_text('def leak: "TOKEN-9";\n')
    monkeypatch.setenv("HOME", str(home))
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    remote = ["git", "-C", str(ws), "remote", "add", "origin", "https://example.com/r"]
    subprocess.run(
        remote, check=True, env={"PATH": "/usr/bin:/bin", "GIT_CONFIG_GLOBAL": "/dev/null"}
    )
    command = (
        "git remote -v; jq -n 'leak' 2>&1; echo HOME=$HOME; ls -A ~ | wc -l; "
        "ulimit -t; ulimit -f; ulimit -d; git --version; python3 --version"
    )
    result = await run_shell(command, ws, 30, False, None, profile="plan")
    assert result.data is not None
    out = result.data["stdout"]
    assert "TOKEN-9" not in out and "origin\thttps://example.com/r (fetch)" in out, out
    lines = out.splitlines()
    private = next(x for x in lines if x.startswith("HOME="))[5:]
    assert private != str(home) and not Path(private).exists()
    at = lines.index(f"HOME={private}")
    assert lines[at + 1 : at + 5] == ["0", "600", "1048576", "4194304"], lines
    assert lines[at + 5].startswith("git version") and lines[at + 6].startswith("Python 3")


async def test_build_commands_keep_the_environment_but_not_server_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("SOME_TOOL_SETTING", "kept")
    result = await run_shell("env", tmp_path, 30, False, None, profile="build")
    assert result.data is not None
    assert "SOME_TOOL_SETTING=kept" in result.data["stdout"]
    assert "sk-secret" not in result.data["stdout"]


def test_model_credentials_never_reach_commands() -> None:
    from plan_lsp.tools.bash import shell_env

    env = shell_env(
        {"OPENAI_API_KEY": "sk-1", "ANTHROPIC_API_KEY": "a", "PLAN_LSP_API_KEY": "k", "HOME": "/h"}
    )
    assert "OPENAI_API_KEY" not in env and "ANTHROPIC_API_KEY" not in env
    assert "PLAN_LSP_API_KEY" not in env and env["HOME"] == "/h"
