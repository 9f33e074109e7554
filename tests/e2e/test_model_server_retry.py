"""A run the model server failed is retried with one action (`planLsp/retry`; Neovim's
`:PlanRetry`; over ACP, the turn's error says how), through the real server process against
loopback model servers: one that goes down half way through a streamed answer and comes back
on the same port, and a reverse proxy that answers 502 with an HTML page after the run's
first step. The conversation the model is sent holds the prompt once and no half turn."""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

import acp
import pytest

from tests.e2e.scripts import requests_of, sample_project
from tests.e2e.test_acp import Client
from tests.e2e.test_neovim import LUA_DIR, run_nvim
from tests.e2e.test_neovim import PROMPT as NVIM_PROMPT
from tests.fake_model_servers import (
    DropConnection,
    ErrorReply,
    FakeModelServer,
    ModelReply,
    RecordedRequest,
    Reply,
    ReplyToolCall,
    openai_sse_events,
)
from tests.lsp_harness import running_server

pytestmark = pytest.mark.e2e

PROMPT = "What does hello.py do?"
PROXY_502 = (
    "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head>"
    "<body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>"
)


def _args(server: FakeModelServer) -> list[str]:
    return ["--provider", "openai", "--base-url", server.openai_base_url, "--model", "fake-model",
            "--plan-shell", "classified"]  # fmt: skip


def _half_a_stream(reply: ModelReply) -> str:
    """The first half of `reply` as the server streams it: the connection drops there."""
    events = openai_sse_events(reply, "fake-model", include_usage=True)
    return "".join(events[: len(events) // 2])


def _user_texts(request: RecordedRequest) -> list[str]:
    return [json.dumps(m.get("content")) for m in request.body["messages"] if m["role"] == "user"]


def _errors(ed: Any, start: int = 0) -> list[dict[str, Any]]:
    return [u for u in ed.ed.updates[start:] if u.get("kind") == "error"]


async def test_a_server_restarted_mid_stream_fails_the_run_cleanly_and_a_retry_succeeds(
    tmp_path: Path,
) -> None:
    """The server goes down half way through its answer. The run ends with the error (the
    prompt marked failed, retry offered); a retry while it is down is refused by the
    connection and keeps the prompt again; once it is back on its port, a retry is answered,
    and the model is sent the prompt exactly once, with nothing of the broken answer."""
    ws = sample_project(tmp_path / "ws")
    answer = ModelReply(text="It prints hi, and nothing else at all.", chunk=4)
    server = FakeModelServer().start()
    port = server.port

    def goes_down(request: RecordedRequest) -> Reply | None:
        # The process dies mid-answer: nothing listens on its port any more.
        server.gate = None
        threading.Thread(target=server.stop).start()
        return DropConnection(partial=_half_a_stream(answer))

    server.gate = goes_down
    try:
        async with running_server([ws], *_args(server)) as ed:
            first = await ed.request("planLsp/prompt", {"text": PROMPT})
            [broken] = _errors(ed)
            assert first["stopReason"] == "error", broken
            assert broken["failedPrompt"] is True and broken["retry"] is True, broken
            assert "<" not in broken["message"], broken

            seen = len(ed.ed.updates)
            down = await ed.request("planLsp/retry", {}, timeout=120)
            [refused] = _errors(ed, seen)
            assert down["stopReason"] == "error", refused
            assert refused["code"] == "provider_unreachable", refused
            assert refused["failedPrompt"] is True and refused["retry"] is True, refused

            server.start(port)
            server.enqueue(answer, ModelReply(text="It prints hi."))
            seen = len(ed.ed.updates)
            retried = await ed.request("planLsp/retry", {})
            assert retried["stopReason"] == "end_turn", _errors(ed, seen)
            assert _errors(ed, seen) == []
            prompts = [u for u in ed.ed.updates[seen:] if u.get("kind") == "prompt"]
            assert [(p["origin"], p["text"]) for p in prompts] == [("prompt", PROMPT)]

            # The conversation goes on; nothing is left to retry.
            further = await ed.request("planLsp/prompt", {"text": "Say it shorter."})
            assert further["stopReason"] == "end_turn"
            with pytest.raises(Exception, match="nothing to retry"):
                await ed.request("planLsp/retry", {})
            history = await ed.request("planLsp/history", {})
    finally:
        server.stop()
    retried_request, last = server.requests[-2:]
    [user] = _user_texts(retried_request)
    assert PROMPT in user
    assert [m["role"] for m in retried_request.body["messages"]][-1] == "user"
    assert "assistant" not in [m["role"] for m in retried_request.body["messages"]]
    assessed = json.dumps(last.body["messages"])
    assert assessed.count(PROMPT) == 1 and assessed.count(answer.text) == 1
    assert "Say it shorter." in assessed
    shown = [(h.get("text"), h.get("status")) for h in history["updates"] if h["kind"] == "prompt"]
    assert shown == [
        (PROMPT, "failed"),
        (PROMPT, "failed"),
        (PROMPT, None),
        ("Say it shorter.", None),
    ], shown


async def test_a_502_after_the_first_step_is_retried_from_that_step(tmp_path: Path) -> None:
    """The model reads a file; the next request meets a reverse proxy's HTML 502. The run
    fails with the page reduced to its status and title, and the prompt is not marked
    failed (the model saw it). A retry goes on from the last complete step: the request
    carries the prompt once, the call and its result once, and no new user turn; the file is
    not read a second time."""
    ws = sample_project(tmp_path / "ws")
    up = threading.Event()
    with FakeModelServer() as server:

        def proxy(request: RecordedRequest) -> Reply | None:
            if len(server.requests) > 1 and not up.is_set():
                return ErrorReply(502, body=PROXY_502, content_type="text/html")
            return None

        server.gate = proxy
        server.enqueue(
            ModelReply(tool_calls=[ReplyToolCall("read_file", {"path": "hello.py"}, id="c1")]),
            ModelReply(text="It prints hi."),
        )
        async with running_server([ws], *_args(server)) as ed:
            first = await ed.request("planLsp/prompt", {"text": PROMPT}, timeout=120)
            [failed] = _errors(ed)
            assert first["stopReason"] == "error", failed
            assert failed["failedPrompt"] is False and failed["retry"] is True, failed
            assert "502" in failed["message"] and "Bad Gateway" in failed["message"], failed
            assert "<" not in failed["message"], failed
            up.set()
            seen = len(ed.ed.updates)
            retried = await ed.request("planLsp/retry", {})
            assert retried["stopReason"] == "end_turn", _errors(ed, seen)
            results = [u for u in ed.ed.updates if u.get("kind") == "toolResult"]
            history = await ed.request("planLsp/history", {})
        failed_request, sent = (r.body["messages"] for r in server.requests[-2:])
    assert [r["toolCallId"] for r in results] == ["c1"]
    # What failed is what is sent again.
    assert sent == failed_request
    roles = [m["role"] for m in sent]
    assert roles[1:] == ["user", "assistant", "tool", "user"], roles
    assert PROMPT not in json.dumps(sent[-1]), sent[-1]
    assert json.dumps(sent).count(PROMPT) == 1
    assert [m["tool_calls"][0]["id"] for m in sent if m.get("tool_calls")] == ["c1"]
    shown = [(h.get("text"), h.get("status")) for h in history["updates"] if h["kind"] == "prompt"]
    assert shown == [(PROMPT, None), (PROMPT, None)], shown


async def test_nothing_to_retry_is_refused_with_the_reason(tmp_path: Path) -> None:
    ws = sample_project(tmp_path / "ws")
    with FakeModelServer() as server:
        server.enqueue(ModelReply(text="fine"))
        async with running_server([ws], *_args(server)) as ed:
            with pytest.raises(Exception, match="nothing to retry"):
                await ed.request("planLsp/retry", {})
            assert (await ed.request("planLsp/prompt", {"text": "hi"}))["stopReason"] == "end_turn"
            with pytest.raises(Exception, match="nothing to retry"):
                await ed.request("planLsp/retry", {})


def test_plan_retry_in_neovim(tmp_path: Path) -> None:
    """The model server refuses the prompt's run: the plugin's notification names :PlanRetry,
    which finishes the run with the prompt sent once; a second :PlanRetry is refused."""
    turns: list[dict[str, Any]] = [
        {"error": {"kind": "connection", "message": "connection refused"}},
        {"text": "It prints hi."},
    ]
    run = run_nvim("0.11", LUA_DIR / "retry_session.lua", turns, tmp_path)
    result = run.result
    assert result["failed"]["stopReason"] == "error", result
    assert "connection refused" in result["failed"]["notification"]["message"], result
    assert result["retried"] == "end_turn", result
    assert result["refusal"]["level"] == 3, result  # vim.log.levels.WARN
    retried = requests_of(run.transcript)[-1]["messages"]
    assert json.dumps(retried).count(NVIM_PROMPT) == 1, retried


async def test_the_acp_turn_says_how_to_retry(tmp_path: Path) -> None:
    """Over ACP the failed turn's message says how to retry: the prompt sent again, or
    /retry; either way it is answered, and the model is sent it once."""
    ws = sample_project(tmp_path / "ws")
    client = Client()
    with FakeModelServer() as server:
        up = threading.Event()
        server.gate = lambda request: None if up.is_set() else ErrorReply(502)
        server.enqueue(ModelReply(text="It prints hi."))
        command = [sys.executable, "-m", "plan_lsp", "acp", *_args(server)]
        async with acp.spawn_agent_process(client, *command, env=dict(os.environ)) as (conn, _):
            await conn.initialize(protocol_version=1)
            sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
            await conn.prompt(session_id=sid, prompt=[acp.text_block(PROMPT)])
            told = client.text().rstrip()
            assert "502" in told and told.endswith("Send /retry (or the prompt again) to retry.")
            up.set()
            await conn.prompt(session_id=sid, prompt=[acp.text_block(PROMPT)])
            assert client.text().rstrip().endswith("It prints hi."), client.text()
            # Failed again, then /retry: the prompt is not typed again, and sent once.
            up.clear()
            await conn.prompt(session_id=sid, prompt=[acp.text_block("And then?")])
            up.set()
            server.enqueue(ModelReply(text="Then it ends."))
            await conn.prompt(session_id=sid, prompt=[acp.text_block("/retry")])
            assert client.text().rstrip().endswith("Then it ends."), client.text()
    assert json.dumps(server.requests[-1].body["messages"]).count("And then?") == 1
    assert "/retry" not in json.dumps(server.requests[-1].body["messages"])
