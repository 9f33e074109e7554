"""What a repository, an MCP server or a plan-mode command can throw at the server, through
the real server process: a deny rule written to backtrack, a config file nested 100,000
deep, a 50 MB MCP answer, a command that allocates 8 GiB. Each ends with a clear message
and `planLsp/state` keeps answering (and a mode switch works) during and after.

No wall-clock thresholds: an answer must arrive (the harness gives each request 30-60 s;
with the old backtracking matcher or the SDK reading a 50 MB line whole, none did)."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, Literal

import pytest

from plan_lsp.policy.sandbox.layout import DATA_KIB
from plan_lsp.tools.bash import run_shell
from tests.e2e.scripts import requests_of, sample_project, scripted_args, write_script
from tests.lsp_harness import Editor, running_server
from tests.mcp_servers import sdk_command
from tests.needs import need, need_program
from tests.sandbox_support import require

# 26 times `**/` (80 bytes): `(?:.*/)?` or `.*.*/` 26 times as a regular expression.
PATHOLOGICAL = "**/" * 26 + "x"
LONG_PATH = "a/" * 5000 + "b"


async def _answers_while(ed: Editor, run: Awaitable[Any]) -> tuple[Any, int]:
    """Ask for the state again and again until `run` is done; how many answers came while
    it ran (each must come: a request that gets no answer fails the test)."""
    task = asyncio.ensure_future(run)
    answered = 0
    while not task.done():
        state = await ed.request("planLsp/state", {}, timeout=30)
        if state["running"]:
            answered += 1
    return await task, answered


def _observations(transcript: Path) -> list[str]:
    """Every tool observation the model was given, in order."""
    last = requests_of(transcript)[-1]
    return [str(m["content"]) for m in last["messages"] if m["role"] == "tool"]


def _bash(command: str) -> dict[str, Any]:
    return {"name": "bash", "arguments": {"command": command}}


# -- (a) a deny rule written to backtrack ----------------------------------------------------


async def test_a_pathological_deny_rule_is_matched_without_freezing_the_server(
    tmp_path: Path,
) -> None:
    ws = sample_project(tmp_path / "ws")
    (ws / ".plan-lsp").mkdir()
    (ws / ".plan-lsp" / "config.toml").write_text(
        f'[permissions]\ndeny = ["bash({PATHOLOGICAL})", "read_file({PATHOLOGICAL})"]\n'
    )
    turns: list[dict[str, Any]] = [
        {"tool_calls": [_bash(f"echo {LONG_PATH}")]},
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "a/" * 200 + "b"}}]},
        {"tool_calls": [_bash(f"echo {LONG_PATH}/x")]},
        {"text": "done"},
    ]
    script = write_script(tmp_path / "script.json", turns)
    transcript = tmp_path / "t.jsonl"
    # 10 KB outputs of one-character tokens: a window that holds them (not under test here).
    window = ["--context-window", "200000"]
    async with running_server([ws], *scripted_args(script, transcript), *window) as ed:
        assert (await ed.state())["configWarnings"] == []  # the rule is within the limits
        # every state request asked while the rule is matched must be answered
        result, _answered = await _answers_while(
            ed, ed.request("planLsp/prompt", {"text": "look"}, timeout=120)
        )
        assert result["stopReason"] == "end_turn"
        assert (await ed.request("planLsp/setMode", {"mode": "build"}))["mode"] == "build"
        assert (await ed.state())["mode"] == "build"
    echoed, read, denied = _observations(transcript)
    assert echoed.startswith("exit code: 0") and LONG_PATH in echoed
    assert "denied" not in read
    assert "denied by the project rule" in denied and PATHOLOGICAL in denied


async def test_a_rule_over_the_limits_is_refused_by_name_and_the_rest_apply(
    tmp_path: Path,
) -> None:
    ws = sample_project(tmp_path / "ws")
    (ws / ".plan-lsp").mkdir()
    (ws / ".plan-lsp" / "config.toml").write_text(
        '[permissions]\ndeny = ["bash(' + "*a" * 40 + ')", "bash(cat *)"]\n'
    )
    turns: list[dict[str, Any]] = [{"tool_calls": [_bash("cat hello.py")]}, {"text": "ok"}]
    script = write_script(tmp_path / "script.json", turns)
    transcript = tmp_path / "t.jsonl"
    async with running_server([ws], *scripted_args(script, transcript)) as ed:
        warnings = " ".join((await ed.state())["configWarnings"])
        assert "too_many_wildcards" in warnings and "the rule was ignored" in warnings
        assert "too_many_wildcards" in " ".join(m.message for m in ed.client.messages)
        await ed.request("planLsp/prompt", {"text": "read"}, timeout=60)
    assert "denied by the project rule 'bash(cat *)'" in _observations(transcript)[0]


# -- (b) a config file nested too deeply -----------------------------------------------------

NESTED = "a = " + "[" * 100_000 + "]" * 100_000 + "\n"


@pytest.mark.parametrize("where", ["workspace", "user"])
async def test_a_config_nested_too_deeply_is_reported_and_requests_answer(
    tmp_path: Path, where: str
) -> None:
    ws = sample_project(tmp_path / "ws")
    env: dict[str, str] = {}
    if where == "workspace":
        (ws / ".plan-lsp").mkdir()
        (ws / ".plan-lsp" / "config.toml").write_text(NESTED)
    else:
        user = tmp_path / "user.toml"
        user.write_text(NESTED)
        env["PLAN_LSP_CONFIG"] = str(user)
    script = write_script(tmp_path / "script.json", [{"text": "hello"}])
    async with running_server([ws], *scripted_args(script), env=env) as ed:
        state = await ed.state()
        said = [w for w in state["configWarnings"] if "nested too deeply" in w]
        assert said and "its settings were ignored" in said[0], state["configWarnings"]
        assert any("nested too deeply" in m.message for m in ed.client.messages)
        result = await ed.request("planLsp/prompt", {"text": "hi"}, timeout=60)
        assert result["stopReason"] == "end_turn"
        assert (await ed.request("planLsp/setMode", {"mode": "build"}))["mode"] == "build"
        assert (await ed.request("planLsp/history", {})) is not None


# -- (c) a 50 MB answer from an MCP server -----------------------------------------------------


async def test_a_fifty_megabyte_mcp_answer_is_a_clear_error_and_the_server_serves_on(
    tmp_path: Path,
) -> None:
    ws = sample_project(tmp_path / "ws")
    config = tmp_path / "user.toml"
    config.write_text(
        "[[mcp.servers]]\n"
        'name = "sdk"\n'
        f"command = {json.dumps(sdk_command())}\n"
        'read_only_tools = ["big", "echo"]\n'
        "timeout_s = 600\n"  # a timeout is not what ends the call
    )
    turns = [
        {"tool_calls": [{"name": "mcp__sdk__big", "arguments": {"size": 50_000_000}}]},
        {"tool_calls": [{"name": "mcp__sdk__echo", "arguments": {"text": "still here"}}]},
        {"text": "done"},
    ]
    script = write_script(tmp_path / "script.json", turns)
    transcript = tmp_path / "t.jsonl"
    async with running_server(
        [ws], *scripted_args(script, transcript), env={"PLAN_LSP_CONFIG": str(config)}
    ) as ed:
        result, _answered = await _answers_while(
            ed, ed.request("planLsp/prompt", {"text": "fetch"}, timeout=300)
        )
        assert result["stopReason"] == "end_turn"
        assert (await ed.request("planLsp/setMode", {"mode": "build"}))["mode"] == "build"
        assert all(len(json.dumps(u)) < 1_000_000 for u in ed.ed.updates)
    too_large, echoed = _observations(transcript)
    error = json.loads(too_large)
    assert error["error"] == "mcp_result_too_large", error
    assert "more than the limit of 8,388,608 bytes" in error["message"]
    assert "answered big with 1" in error["message"]  # ~100 MB: text and structured copy
    assert "still here" in echoed


# -- (d) a plan-mode command that allocates 8 GiB --------------------------------------------

HOG = 'python3 -c "x = bytearray(8 << 30)"'


def _git_workspace(root: Path) -> Path:
    ws = sample_project(root)
    for args in (
        ["init", "-q"],
        ["-c", "user.email=dev@example.com", "-c", "user.name=Dev", "add", "."],
        ["-c", "user.email=dev@example.com", "-c", "user.name=Dev", "commit", "-qm", "first"],
    ):
        subprocess.run(["git", *args], cwd=ws, check=True, capture_output=True)
    return ws


@pytest.mark.parametrize("mechanism", ["bubblewrap", "landlock", "none"])
async def test_a_plan_mode_command_cannot_allocate_beyond_the_limit(
    tmp_path: Path, mechanism: str
) -> None:
    need_program("rg", "research commands use it")
    need(shutil.which("python3") is not None, "python3 is not on PATH")
    if mechanism != "none":
        require(mechanism)  # type: ignore[arg-type]
    ws = _git_workspace(tmp_path / "ws")
    # Without a sandbox the classifier refuses `python3 -c`: only the ordinary commands
    # go through the server there (the limit itself: the next test).
    commands = [] if mechanism == "none" else [HOG, 'python3 -c "print(len(bytearray(256 << 20)))"']
    commands += ["git log --oneline -1", "rg -c print ."]
    turns = [{"tool_calls": [_bash(c)]} for c in commands] + [{"text": "done"}]
    script = write_script(tmp_path / "script.json", turns)
    transcript = tmp_path / "t.jsonl"
    shell = "classified" if mechanism == "none" else "sandboxed"
    args = ["--provider", "scripted", "--script", str(script), "--transcript", str(transcript)]
    async with running_server(
        [ws], *args, "--plan-shell", shell, env={"PLAN_LSP_SANDBOX": mechanism}
    ) as ed:
        state = await ed.settled_state()
        assert state["planShell"] == shell
        result = await ed.request("planLsp/prompt", {"text": "research"}, timeout=120)
        assert result["stopReason"] == "end_turn"
        assert (await ed.request("planLsp/setMode", {"mode": "build"}))["mode"] == "build"
    seen = _observations(transcript)
    if mechanism != "none":
        hog, ordinary = seen[0], seen[1]
        assert hog.startswith("exit code: 1") and "MemoryError" in hog, hog[:500]
        assert ordinary.startswith("exit code: 0") and str(256 << 20) in ordinary, ordinary
    git_log, rg = seen[-2], seen[-1]
    assert git_log.startswith("exit code: 0") and "first" in git_log, git_log
    assert rg.startswith("exit code: 0") and "hello.py:1" in rg, rg


async def test_the_memory_limit_holds_without_a_sandbox(tmp_path: Path) -> None:
    """A plan-mode command without a sandbox (`classified`; the classifier decides what
    may run): the bash tool runs it under the same limit."""
    ws = _git_workspace(tmp_path / "ws")

    async def run(command: str, profile: Literal["plan", "build"] = "plan") -> dict[str, Any]:
        result = await run_shell(command, ws, 120, False, None, profile=profile)
        assert result.data is not None, result.content
        return result.data

    hog = await run(HOG)
    assert hog["exit_code"] == 1 and "MemoryError" in hog["stderr"], hog
    assert hog["confinement"] == "none"
    fine = await run("python3 -c 'print(len(bytearray(256 << 20)))'")
    assert fine["exit_code"] == 0 and str(256 << 20) in fine["stdout"]
    log = await run("git log --oneline -1")
    assert log["exit_code"] == 0 and "first" in log["stdout"]
    assert (await run("ulimit -d"))["stdout"].strip() == str(DATA_KIB)
    # build mode is not limited: a build may need more
    assert (await run("ulimit -d", "build"))["stdout"].strip() != str(DATA_KIB)


# -- (e) a grep pattern written to backtrack, over an open buffer --------------------------

BACKTRACKING = "(a+)+$"


async def test_a_backtracking_grep_pattern_never_freezes_the_server(tmp_path: Path) -> None:
    """The model's pattern over a buffer the user has open (and the disk, by ripgrep): matched
    by RE2 (linear time), never by Python's backtracking `re` (hours for this pattern)."""
    need_program("rg", "the grep tool's engine")
    ws = sample_project(tmp_path / "ws")
    notes = ws / "notes.txt"
    notes.write_text("nothing here\n")
    turns: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "grep", "arguments": {"pattern": BACKTRACKING}}]},
        {"tool_calls": [{"name": "grep", "arguments": {"pattern": "a{40}!"}}]},
        {"text": "done"},
    ]
    script = write_script(tmp_path / "script.json", turns)
    transcript = tmp_path / "t.jsonl"
    async with running_server([ws], *scripted_args(script, transcript)) as ed:
        ed.open(notes, "a" * 40 + "!\n" + "a" * 40 + "\n")  # unsaved: the buffer is searched
        result, _answered = await _answers_while(
            ed, ed.request("planLsp/prompt", {"text": "search"}, timeout=120)
        )
        assert result["stopReason"] == "end_turn"
    backtracking, literal = _observations(transcript)
    assert backtracking.splitlines()[0] == f"notes.txt:2:{'a' * 40}"
    assert literal.splitlines()[0] == f"notes.txt:1:{'a' * 40}!"


async def test_without_ripgrep_a_pattern_that_never_ends_leaves_the_server_responsive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The search without ripgrep is RE2's, in the server's process and linear in the text:
    `(a+)+$` over a large file (thousands of lines on which Python's `re` backtracks for
    hours each) ends promptly and starts no process; a pattern outside ripgrep's dialect
    (a backreference, a lookahead) is refused, naming the pattern and why."""
    from plan_lsp.tools import grep_engine

    def no_process(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the search without ripgrep started a process")

    monkeypatch.setattr(asyncio, "create_subprocess_exec", no_process)
    monkeypatch.setattr(subprocess, "Popen", no_process)
    big = tmp_path / "big.txt"
    big.write_text(("a" * 40 + "!\n") * 20_000 + "a" * 40 + "\n")  # ~800 KB
    found = await asyncio.wait_for(
        grep_engine.python_search(BACKTRACKING, False, [big], [tmp_path], {}, 10), 30
    )
    assert found == [(big, 20_001, "a" * 40)]
    found = await grep_engine.python_search("A!", True, [big], [tmp_path],
                                            {tmp_path / "b.txt": "xa!\n"}, 1)  # fmt: skip
    assert found == [
        (big, 1, "a" * 40 + "!"),
        (big, 2, "a" * 40 + "!"),
        (tmp_path / "b.txt", 1, "xa!"),
    ]
    for pattern, why in [
        ("(a)\\1", "invalid escape sequence"),
        ("a(?=b)", "invalid perl operator"),
    ]:
        with pytest.raises(grep_engine.GrepFailed) as refused:
            await grep_engine.python_search(pattern, False, [big], [tmp_path], {}, 10)
        assert repr(pattern) in str(refused.value) and why in str(refused.value)


# -- (f) a side-effect MCP call that goes on after its cancellation --------------------------


async def test_a_side_effect_mcp_call_cannot_outlive_the_switch_to_plan(tmp_path: Path) -> None:
    """An MCP server written with the official SDK keeps writing into the workspace after its
    call is cancelled. The switch to plan mode answers only once that server is dead; it is
    started again for the next call, which works."""
    from tests.needs import process_alive

    ws = sample_project(tmp_path / "ws")
    out, pid_file = ws / "written.txt", tmp_path / "server.pid"
    config = tmp_path / "user.toml"
    config.write_text(
        "[[mcp.servers]]\n"
        'name = "sdk"\n'
        f"command = {json.dumps(sdk_command())}\n"
        'read_only_tools = ["echo"]\n'
    )
    write_call = {"path": str(out), "pid_file": str(pid_file)}
    turns = [
        {"tool_calls": [{"name": "mcp__sdk__keep_writing", "arguments": write_call}]},
        {"text": "stopped"},
        {"tool_calls": [{"name": "mcp__sdk__echo", "arguments": {"text": "back again"}}]},
        {"text": "done"},
    ]
    script = write_script(tmp_path / "script.json", turns)
    transcript = tmp_path / "t.jsonl"
    async with running_server(
        [ws], *scripted_args(script, transcript), env={"PLAN_LSP_CONFIG": str(config)}
    ) as ed:
        await ed.request("planLsp/setMode", {"mode": "build"})
        await ed.request("planLsp/setPermissionMode", {"permissionMode": "yolo"})
        run = asyncio.ensure_future(ed.request("planLsp/prompt", {"text": "write"}, timeout=120))
        async with asyncio.timeout(60):
            while not (out.exists() and pid_file.exists() and pid_file.read_text()):
                await asyncio.sleep(0.01)
        answer = await ed.request("planLsp/setMode", {"mode": "plan"})
        # Answered: the server that ran the call was killed (SIGKILL: it runs nothing more;
        # the kernel may take a moment to mark it dead).
        pid = int(pid_file.read_text())
        async with asyncio.timeout(10):
            while process_alive(pid):
                await asyncio.sleep(0.01)
        size = out.stat().st_size
        assert [c["tool"] for c in answer["cancelled"]] == ["mcp__sdk__keep_writing"]
        assert (await asyncio.wait_for(run, 60))["stopReason"] == "end_turn"
        again = await ed.request("planLsp/prompt", {"text": "echo"}, timeout=120)
        assert again["stopReason"] == "end_turn"
        assert out.stat().st_size == size  # nothing was written after the switch
    stopped, echoed = _observations(transcript)[-2:]
    assert "stopped before it finished" in stopped, stopped
    assert "back again" in echoed
