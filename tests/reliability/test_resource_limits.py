"""Resource limits: a model that streams a 10 MB tool argument, a tool that prints 100 MB, a
run that never ends (endless tool calls, a model that stalls) — each is capped with a clear
message, and `planLsp/state` keeps answering within a few seconds during and after."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import pytest

from plan_lsp.session.state_home import state_root, workspace_key
from tests.e2e.scripts import sample_project, scripted_args, write_script
from tests.lsp_harness import Editor, kill_server, running_server

RESPONSIVE_S = 3.0  # the longest a state request may take, during a run or after it
TEN_MB = 10 * 1024 * 1024


def _server(tmp_path: Path, turns: list[dict[str, Any]], *args: str, chunk: int = 16, **kw: Any):  # type: ignore[no-untyped-def]
    ws = sample_project(tmp_path / "ws")
    script = write_script(tmp_path / "script.json", turns, chunk=chunk)
    transcript = tmp_path / "transcript.jsonl"
    return ws, transcript, running_server([ws], *scripted_args(script, transcript), *args, **kw)


async def _state_latencies_while(ed: Editor, run: Awaitable[Any]) -> tuple[Any, list[float]]:
    """Ask for the state again and again until `run` is done; every answer is timed."""
    task = asyncio.ensure_future(run)
    while_running: list[float] = []
    while not task.done():
        start = time.monotonic()
        state = await ed.request("planLsp/state", {}, timeout=30)
        if state["running"]:
            while_running.append(time.monotonic() - start)
    result = await task
    start = time.monotonic()
    assert (await ed.state())["running"] is False
    assert time.monotonic() - start < RESPONSIVE_S
    return result, while_running


def _stored_messages(ws: Path) -> list[str]:
    db = state_root() / workspace_key(ws) / "state.db"
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return [str(r[0]) for r in con.execute("SELECT message FROM messages").fetchall()]
    finally:
        con.close()


def _requests(transcript: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in transcript.read_text().splitlines()]


# -- a 10 MB tool argument ---------------------------------------------------------------------


@pytest.mark.parametrize("tool", ["write_file", "plan_write"])
async def test_a_ten_megabyte_tool_argument_is_capped(tmp_path: Path, tool: str) -> None:
    huge = "x" * TEN_MB
    arguments = {"path": "big.txt", "content": huge} if tool == "write_file" else {"content": huge}
    turns: list[dict[str, Any]] = [
        {"delay_ms": 1, "tool_calls": [{"name": tool, "arguments": arguments}]},
        {"text": "understood"},
    ]
    ws, transcript, cm = _server(tmp_path, turns, "--permission-mode", "yolo", chunk=4096)
    async with cm as ed:
        if tool == "write_file":
            await ed.request("planLsp/setMode", {"mode": "build"})
        result, latencies = await _state_latencies_while(
            ed, ed.request("planLsp/prompt", {"text": "write it"}, timeout=120)
        )
        assert result["stopReason"] == "end_turn"
        assert latencies, "the state was never asked while the argument streamed"
        assert max(latencies) < RESPONSIVE_S, latencies
        errors = [u["message"] for u in ed.updates_of("error")]
        assert any(f"arguments of {tool} exceeded" in m for m in errors), errors
        # Nothing near 10 MB reached the client, the disk, the database or the model.
        assert all(len(json.dumps(u)) < 2_000_000 for u in ed.ed.updates)
        assert not (ws / "big.txt").exists()
        plan = ws / ".plan-lsp" / "plans" / "PLAN.md"
        assert not plan.exists() or plan.stat().st_size == 0
        assert (ed.buffer_text(plan) or "") == ""
        assert max(len(m) for m in _stored_messages(ws)) < 2_000_000
    second = _requests(transcript)[1]
    observation = next(m for m in second["messages"] if m["role"] == "tool")
    assert "arguments_too_large" in observation["content"]


# -- a tool that prints 100 MB -----------------------------------------------------------------


async def test_a_command_printing_100_megabytes_is_cut_and_the_server_answers(
    tmp_path: Path,
) -> None:
    command = "yes | head -c 100000000"
    turns: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
        {"text": "that was long"},
    ]
    # A window large enough for the capped output: what the bash tool keeps is under test
    # here, not compaction.
    ws, transcript, cm = _server(
        tmp_path, turns, "--permission-mode", "yolo", "--context-window", "200000"
    )
    async with cm as ed:
        await ed.request("planLsp/setMode", {"mode": "build"})
        result, latencies = await _state_latencies_while(
            ed, ed.request("planLsp/prompt", {"text": "print a lot"}, timeout=120)
        )
        assert result["stopReason"] == "end_turn"
        assert latencies and max(latencies) < RESPONSIVE_S, latencies
        shown = [u for u in ed.updates_of("toolResult") if u["tool"] == "bash"]
        assert shown and len(shown[0]["content"]) <= 4000
        assert max(len(m) for m in _stored_messages(ws)) < 200_000
    second = _requests(transcript)[1]
    observation = next(m for m in second["messages"] if m["role"] == "tool")["content"]
    assert observation.startswith("exit code: 0\nstdout:\ny\ny\n"), observation[:100]
    assert "cut from the middle of this output" in observation
    assert observation.endswith("y\n")
    assert len(observation) < 100_000


# -- a run that never ends ---------------------------------------------------------------------


async def test_endless_tool_calls_stop_at_max_steps(tmp_path: Path) -> None:
    turns = [{"tool_calls": [{"name": "list_dir", "arguments": {}}]}] * 40
    _ws, transcript, cm = _server(tmp_path, turns, "--max-steps", "5")
    async with cm as ed:
        result, latencies = await _state_latencies_while(
            ed, ed.request("planLsp/prompt", {"text": "loop"}, timeout=60)
        )
        assert result["stopReason"] == "max_steps"
        assert max(latencies, default=0.0) < RESPONSIVE_S
        errors = [u["message"] for u in ed.updates_of("error")]
        assert "stopped after 5 model requests" in errors
        done = ed.updates_of("done")
        assert done and done[-1]["stopReason"] == "max_steps"
    assert len(_requests(transcript)) == 5


async def test_a_stalled_model_is_stopped_by_the_run_timeout(tmp_path: Path) -> None:
    turns = [{"delay_ms": 600_000, "text": "a" * 64}]
    _ws, _t, cm = _server(tmp_path, turns, chunk=8, init_options={"runTimeoutS": 1})
    async with cm as ed:
        try:
            result, latencies = await _state_latencies_while(
                ed, ed.request("planLsp/prompt", {"text": "think forever"}, timeout=1 + 8)
            )
        except TimeoutError:
            await kill_server(ed)  # a run that never ended would also hold up the shutdown
            raise
        assert result["stopReason"] == "timeout"
        assert latencies and max(latencies) < RESPONSIVE_S
        errors = [u["message"] for u in ed.updates_of("error")]
        assert any("run_timeout_s" in m for m in errors), errors


async def test_cancel_stops_a_stalled_model_promptly(tmp_path: Path) -> None:
    turns = [{"delay_ms": 600_000, "text": "a" * 64}]
    _ws, _t, cm = _server(tmp_path, turns, chunk=8)
    async with cm as ed:
        prompt = asyncio.ensure_future(ed.request("planLsp/prompt", {"text": "go"}, timeout=60))
        await ed.wait_update(lambda u: u["kind"] == "text")
        state = await ed.state()
        assert state["running"] is True
        start = time.monotonic()
        await ed.request("planLsp/cancel", {}, timeout=30)
        result = await prompt
        elapsed = time.monotonic() - start
        assert result["stopReason"] == "cancelled"
        assert (await ed.state())["running"] is False
        assert elapsed < RESPONSIVE_S, f"cancel took {elapsed:.1f} s"
