"""Switching to plan mode while a build-mode command runs: the answer comes only after the
command's whole process group is gone, says what was stopped, and nothing changes after it."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from tests.e2e.scripts import requests_of, sample_project, scripted_args, write_script
from tests.lsp_harness import running_server
from tests.sandbox_support import marked_processes


async def _wait_for_file(path: Path, timeout: float = 30) -> None:
    async def _poll() -> None:
        while not path.exists():
            await asyncio.sleep(0.02)

    await asyncio.wait_for(_poll(), timeout)


@pytest.mark.parametrize("how", ["setMode", "toggleMode", "command"])
async def test_switch_to_plan_stops_a_running_command(tmp_path: Path, how: str) -> None:
    ws = sample_project(tmp_path / "ws")
    marker = f"mode-switch-{os.getpid()}-{how}"
    command = f"echo > started; (sleep 30; touch late-child) & sleep 30; touch changed # {marker}"
    script = write_script(
        tmp_path / "s.json",
        [
            {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
            {"text": "stopped"},
        ],
    )
    transcript = tmp_path / "t.jsonl"
    args = [*scripted_args(script, transcript), "--permission-mode", "yolo"]
    async with running_server([ws], *args) as ed:
        await ed.request("planLsp/setMode", {"mode": "build"})
        run = asyncio.ensure_future(ed.request("planLsp/prompt", {"text": "do it"}))
        await _wait_for_file(ws / "started")
        if how == "setMode":
            answer = await ed.request("planLsp/setMode", {"mode": "plan"})
        elif how == "toggleMode":
            answer = await ed.request("planLsp/toggleMode", {})
        else:
            answer = await ed.command("planLsp.toggleMode", {})
        assert answer["mode"] == "plan"
        assert [c["tool"] for c in answer["cancelled"]] == ["bash"]
        assert not marked_processes(marker), "the command still runs after the switch was answered"
        notice = await ed.wait_update(lambda u: u["kind"] == "cancelledCalls")
        assert notice["calls"] == answer["cancelled"]
        result = await asyncio.wait_for(run, 60)
        assert result["stopReason"] == "end_turn"
        observation = next(u for u in ed.updates_of("toolResult") if u["tool"] == "bash")
        assert observation["isError"] and "plan mode" in observation["content"]
    assert not (ws / "changed").exists() and not (ws / "late-child").exists()
    # The model's next request was a plan-mode request.
    assert requests_of(transcript)[-1]["mode"] == "plan"


async def test_switch_to_build_stops_nothing(tmp_path: Path) -> None:
    ws = sample_project(tmp_path / "ws")
    script = write_script(tmp_path / "s.json", [{"text": "hi"}])
    async with running_server([ws], *scripted_args(script, tmp_path / "t.jsonl")) as ed:
        answer = await ed.request("planLsp/setMode", {"mode": "build"})
        assert answer["mode"] == "build" and answer["cancelled"] == []
