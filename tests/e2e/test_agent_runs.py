"""The agent loop through the real server: permission prompts over planLsp/*, mode
toggles during a prompt, cancellation, bad model output, subagents, questions, restart."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from tests.e2e.scripts import requests_of, sample_project, scripted_session
from tests.fake_model_servers import FakeModelServer, ModelReply, ReplyToolCall
from tests.lsp_harness import kill_server, running_server


def _write(path: str, content: str) -> dict[str, Any]:
    return {"name": "write_file", "arguments": {"path": path, "content": content}}


_server = scripted_session


async def test_permission_request_reaches_the_client_and_its_answer_is_honoured(
    tmp_path: Path,
) -> None:
    turns = [{"tool_calls": [_write("a.txt", "A"), _write("b.txt", "B")]}, {"text": "ok"}]
    ws, _t, cm = _server(tmp_path, turns, permission_requests=True)
    async with cm as ed:
        await ed.request("planLsp/setMode", {"mode": "build"})
        ed.ed.answer_permission = lambda p: (
            "allow_once" if "a.txt" in p["summary"] else "reject_once"
        )
        result = await ed.request("planLsp/prompt", {"text": "write two files"})
        assert result["stopReason"] == "end_turn"
        assert [p["tool"] for p in ed.ed.permission_requests] == ["write_file", "write_file"]
        assert ed.ed.permission_requests[0]["options"] == [
            "allow_once",
            "allow_always",
            "reject_once",
            "reject_always",
        ]
        assert (ws / "a.txt").read_text() == "A"
        assert not (ws / "b.txt").exists()
        assert not ed.ed.message_requests  # the custom request replaced showMessageRequest


async def test_allow_always_in_build_never_applies_in_plan(tmp_path: Path) -> None:
    turns = [
        {"tool_calls": [_write("a.txt", "1")]},
        {"text": "ok"},
        {"tool_calls": [_write("a.txt", "2")]},
        {"text": "ok"},
    ]
    ws, _t, cm = _server(tmp_path, turns, permission_requests=True)
    async with cm as ed:
        await ed.request("planLsp/setMode", {"mode": "build"})
        ed.ed.answer_permission = lambda p: "allow_always"
        await ed.request("planLsp/prompt", {"text": "one"})
        await ed.request("planLsp/setMode", {"mode": "plan"})
        await ed.request("planLsp/prompt", {"text": "two"})
        assert (ws / "a.txt").read_text() == "1"
        assert len(ed.ed.permission_requests) == 1  # plan mode never asks: it refuses


async def test_toggle_to_plan_while_a_permission_prompt_is_open_refuses_the_call(
    tmp_path: Path,
) -> None:
    turns = [{"tool_calls": [_write("late.txt", "x")]}, {"text": "ok"}]
    ws, _t, cm = _server(tmp_path, turns, permission_requests=True)
    async with cm as ed:
        await ed.request("planLsp/setMode", {"mode": "build"})
        asked = asyncio.Event()
        release = asyncio.Event()

        async def answer_later() -> None:
            await asked.wait()
            await ed.request("planLsp/setMode", {"mode": "plan"})
            release.set()

        def answer(p: dict[str, Any]) -> str:
            asked.set()
            return "allow_once"

        # The client answers only after the user switched to plan mode.
        original = ed.client.protocol.fm.features["planLsp/requestPermission"]

        async def slow_answer(*args: Any) -> dict[str, Any]:
            answer({})
            await release.wait()
            return {"optionId": "allow_once"}

        ed.client.protocol.fm.features["planLsp/requestPermission"] = slow_answer
        helper = asyncio.ensure_future(answer_later())
        await ed.request("planLsp/prompt", {"text": "write late"})
        await helper
        ed.client.protocol.fm.features["planLsp/requestPermission"] = original
        assert not (ws / "late.txt").exists()
        blocked = ed.updates_of("blocked")
        assert blocked and blocked[0]["error"] == "tool_not_allowed"


async def test_cancel_request_stops_the_run(tmp_path: Path) -> None:
    turns = [{"delay_ms": 30, "text": "y" * 2000}]
    _ws, _t, cm = _server(tmp_path, turns)
    async with cm as ed:
        fut = ed.client.protocol.send_request("planLsp/prompt", {"text": "go"}, msg_id="p1")
        await ed.wait_update(lambda u: u["kind"] == "text")
        ed.client.protocol.notify("$/cancelRequest", types.CancelParams(id="p1"))
        done = await ed.wait_update(lambda u: u["kind"] == "done")
        assert done["stopReason"] == "cancelled"
        assert (await ed.state())["running"] is False
        with pytest.raises(Exception, match="cancel"):
            await asyncio.wrap_future(fut)


async def test_model_mistakes_become_observations(tmp_path: Path) -> None:
    turns = [
        {
            "tool_calls": [
                {"name": "no_such_tool", "arguments": {}},
                {"name": "read_file", "arguments": '{"path": '},
                {"name": "read_file", "arguments": {"path": 42}},
                {"name": "read_file", "arguments": {"path": "../../etc/passwd"}},
            ]
        },
        {"text": "sorry"},
    ]
    _ws, transcript, cm = _server(tmp_path, turns)
    async with cm as ed:
        result = await ed.request("planLsp/prompt", {"text": "go"})
        assert result["stopReason"] == "end_turn"
    second = requests_of(transcript)[1]
    observations = [json.loads(m["content"]) for m in second["messages"] if m["role"] == "tool"]
    assert [o["error"] for o in observations[:3]] == [
        "unknown_tool",
        "invalid_arguments",
        "invalid_arguments",
    ]
    assert "error" in observations[3]
    assert "path" in observations[2]["message"]


async def test_provider_errors_reach_the_user_and_the_server_survives(tmp_path: Path) -> None:
    turns = [
        {"error": {"kind": "rate_limit", "message": "slow down", "retry_after": 3}},
        {"text": "back"},
    ]
    _ws, _t, cm = _server(tmp_path, turns)
    async with cm as ed:
        result = await ed.request("planLsp/prompt", {"text": "go"})
        assert result["stopReason"] == "error"
        assert "slow down" in ed.updates_of("error")[0]["message"]
        again = await ed.request("planLsp/prompt", {"text": "again"})
        assert again["stopReason"] == "end_turn"


async def test_openai_provider_through_the_server_against_a_loopback_model(tmp_path: Path) -> None:
    ws = sample_project(tmp_path / "ws")
    with FakeModelServer() as model:
        model.enqueue(
            ModelReply(
                text="Looking.",
                tool_calls=[ReplyToolCall("write_file", {"path": "x", "content": "y"})],
            ),
            ModelReply(text="Blocked, fine."),
        )
        async with running_server(
            [ws],
            "--provider",
            "openai",
            "--base-url",
            model.openai_base_url,
            "--model",
            "m",
            "--plan-shell",
            "classified",
        ) as ed:
            result = await ed.request("planLsp/prompt", {"text": "hi"})
            assert result["stopReason"] == "end_turn"
        sent_tools = {t["function"]["name"] for t in model.requests[0].body["tools"]}
        assert "write_file" not in sent_tools and "read_file" in sent_tools
        second = model.requests[1].body["messages"]
        tool_msg = next(m for m in second if m["role"] == "tool")
        assert "tool_not_allowed" in tool_msg["content"]
    assert not (ws / "x").exists()


async def test_subagent_in_plan_mode_cannot_escape(tmp_path: Path) -> None:
    turns = [
        {"tool_calls": [{"name": "task", "arguments": {"prompt": "write a file"}}]},
        {
            "tool_calls": [
                _write("child.txt", "escaped"),
                {"name": "task", "arguments": {"prompt": "x"}},
            ]
        },
        {"text": "child done"},
        {"text": "parent done"},
    ]
    ws, transcript, cm = _server(tmp_path, turns)
    async with cm as ed:
        result = await ed.request("planLsp/prompt", {"text": "go"})
        assert result["stopReason"] == "end_turn"
    assert not (ws / "child.txt").exists()
    child = requests_of(transcript)[1]
    assert "write_file" not in child["tools"] and "task" not in child["tools"]
    assert "plan_write" not in child["tools"]
    obs = [
        json.loads(m["content"])
        for m in requests_of(transcript)[2]["messages"]
        if m["role"] == "tool"
    ]
    assert {o["error"] for o in obs} == {"tool_not_allowed"}


async def test_ask_user_questions_over_standard_lsp(tmp_path: Path) -> None:
    questions = [{"id": "db", "text": "Which database?", "options": ["sqlite", "postgres"]}]
    turns = [
        {"tool_calls": [{"name": "ask_user", "arguments": {"questions": questions}}]},
        {"text": "ok"},
    ]
    _ws, transcript, cm = _server(tmp_path, turns)
    async with cm as ed:
        ed.ed.answer_message = lambda p: "postgres" if p.message == "Which database?" else None
        await ed.request("planLsp/prompt", {"text": "go"})
    obs = next(m for m in requests_of(transcript)[1]["messages"] if m["role"] == "tool")
    assert "postgres" in obs["content"]


async def test_mode_toggle_is_told_to_the_model_and_restart_continues(tmp_path: Path) -> None:
    turns = [{"text": "first"}, {"text": "second"}]
    ws, transcript, cm = _server(tmp_path, turns)
    async with cm as ed:
        await ed.request("planLsp/prompt", {"text": "hello"})
        await ed.request("planLsp/toggleMode", {})
        await kill_server(ed)
    script = tmp_path / "script.json"
    async with running_server(
        [ws],
        "--provider",
        "scripted",
        "--script",
        str(script),
        "--transcript",
        str(transcript),
    ) as ed:
        assert (await ed.state())["mode"] == "build"
        await ed.request("planLsp/prompt", {"text": "again"})
    last = requests_of(transcript)[-1]
    contents = [m["content"] for m in last["messages"]]
    assert "hello" in contents and "first" in contents  # the conversation continued
    assert last["mode"] == "build"


@pytest.mark.parametrize("reminder_requests", [6])
async def test_plan_reminder_full_on_1_5_9(tmp_path: Path, reminder_requests: int) -> None:
    turns = [{"tool_calls": [{"name": "list_dir", "arguments": {}}]}] * (reminder_requests - 1) + [
        {"text": "end"}
    ]
    _ws, transcript, cm = _server(tmp_path, turns)
    async with cm as ed:
        await ed.request("planLsp/prompt", {"text": "go"})
    fulls = []
    for r in requests_of(transcript):
        reminder = [m for m in r["messages"] if m.get("meta", {}).get("kind") == "plan_reminder"]
        assert len(reminder) == 1 and reminder[0]["meta"]["ephemeral"]
        fulls.append(reminder[0]["meta"]["full"])
    assert fulls == [True, False, False, False, True, False]
    # reminders are never stored: no request carries an earlier request's reminder


async def test_enter_plan_mode_asks_and_is_refused_in_yolo(tmp_path: Path) -> None:
    enter = {"tool_calls": [{"name": "enter_plan_mode", "arguments": {"reason": "big change"}}]}
    turns = [enter, {"text": "ok"}, enter, {"text": "ok"}]
    _ws, transcript, cm = _server(tmp_path, turns)
    async with cm as ed:
        await ed.request("planLsp/setMode", {"mode": "build"})
        await ed.request("planLsp/setPermissionMode", {"permissionMode": "yolo"})
        await ed.request("planLsp/prompt", {"text": "refactor"})
        assert (await ed.state())["mode"] == "build"
        await ed.request("planLsp/setPermissionMode", {"permissionMode": "ask"})
        ed.ed.answer_message = lambda p: "Allow once" if "enter_plan_mode" in p.message else None
        await ed.request("planLsp/prompt", {"text": "refactor again"})
        assert (await ed.state())["mode"] == "plan"
    requests = requests_of(transcript)
    first_obs = next(m for m in requests[1]["messages"] if m["role"] == "tool")
    assert "yolo" in first_obs["content"]
    # after the model entered plan mode, its next request is a plan-mode request
    assert requests[-1]["mode"] == "plan"
    assert "enter_plan_mode" not in requests[-1]["tools"]


async def test_runs_report_work_done_progress(tmp_path: Path) -> None:
    _ws, _t, cm = _server(tmp_path, [{"text": "hello"}])
    async with cm as ed:
        await ed.request("planLsp/prompt", {"text": "go"})

        def kinds() -> list[str | None]:
            reports = [r for token, rs in ed.client.progress_reports.items() for r in rs]
            return [getattr(r, "kind", None) for r in reports]

        async def ended() -> None:
            # Progress follows the client's answer to `create`; the run never waits for it.
            while "end" not in kinds():
                await asyncio.sleep(0.01)

        await asyncio.wait_for(ended(), 10)
        assert kinds()[0] == "begin" and kinds()[-1] == "end"
