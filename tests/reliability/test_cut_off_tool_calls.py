"""A model server that cuts a tool call at its token limit, and refuses any later request
whose history holds arguments that are not JSON — as llama.cpp's `llama-server` does
(HTTP 500 "Failed to parse tool call arguments as JSON"). Through the real server: the cut-off
call is recorded as such and never run, the run goes on, and later prompts of the same
conversation still work."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.scripts import sample_project
from tests.fake_model_servers import (
    ErrorReply,
    FakeModelServer,
    ModelReply,
    RecordedRequest,
    Reply,
    ReplyToolCall,
)
from tests.lsp_harness import running_server

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _broken_arguments(body: Any) -> list[str]:
    broken = []
    for message in body.get("messages", []):
        for call in message.get("tool_calls") or []:
            arguments = call["function"]["arguments"]
            try:
                if not isinstance(json.loads(arguments), dict):
                    broken.append(arguments)
            except ValueError:
                broken.append(arguments)
    return broken


class LlamaLikeServer:
    """First answer: a `read_file` call cut at the token limit (finish reason "length").
    Then plain answers — unless the history replays broken arguments (HTTP 500)."""

    def __init__(self) -> None:
        self.answered = 0

    def __call__(self, request: RecordedRequest) -> Reply | None:
        if request.path.endswith("/models"):
            return None
        if _broken_arguments(request.body):
            return ErrorReply(500, "Failed to parse tool call arguments as JSON")
        self.answered += 1
        if self.answered == 1:
            cut = ReplyToolCall("read_file", '{"path": "hel', id="call_cut")
            return ModelReply(text="Reading.", tool_calls=[cut], finish_reason="length")
        return ModelReply(text=f"answer {self.answered}")


async def test_a_cut_off_tool_call_never_breaks_the_conversation(tmp_path: Path) -> None:
    ws = sample_project(tmp_path / "ws")
    model = LlamaLikeServer()
    with FakeModelServer(model) as server:
        args = ["--provider", "openai", "--base-url", server.openai_base_url, "--model", "m",
                "--plan-shell", "classified"]  # fmt: skip
        async with running_server([ws], *args) as ed:
            first = await ed.request("planLsp/prompt", {"text": "read hello.py"})
            assert first["stopReason"] == "end_turn", first
            second = await ed.request("planLsp/prompt", {"text": "and again"})
            assert second["stopReason"] == "end_turn", second
            errors = [u["message"] for u in ed.updates_of("error")]
        bodies = server.bodies()
    assert not any("500" in e or "parse" in e.lower() for e in errors), errors
    assert all(_broken_arguments(body) == [] for body in bodies)
    # The model was told its call was cut off and not run; the call stays in the history
    # (so the tool result has its call), with no arguments.
    history = bodies[-1]["messages"]
    call = next(m for m in history if m.get("tool_calls"))["tool_calls"][0]
    assert call["id"] == "call_cut" and call["function"]["arguments"] == "{}"
    result = next(m for m in history if m["role"] == "tool" and m["tool_call_id"] == "call_cut")
    assert "arguments_cut_off" in result["content"] and "not run" in result["content"]


async def test_a_conversation_already_holding_broken_arguments_still_works(
    tmp_path: Path,
) -> None:
    """A call whose arguments are not JSON although the model said it finished (a server
    that does not report "length"): the same rule applies."""
    ws = sample_project(tmp_path / "ws")
    replies = iter(
        [
            ModelReply(tool_calls=[ReplyToolCall("read_file", '{"path": "a" "b"}', id="c1")]),
            ModelReply(text="ok"),
            ModelReply(text="still ok"),
        ]
    )

    def respond(request: RecordedRequest) -> Reply | None:
        if request.path.endswith("/models"):
            return None
        if _broken_arguments(request.body):
            return ErrorReply(500, "Failed to parse tool call arguments as JSON")
        return next(replies)

    with FakeModelServer(respond) as server:
        args = ["--provider", "openai", "--base-url", server.openai_base_url, "--model", "m",
                "--plan-shell", "classified"]  # fmt: skip
        async with running_server([ws], *args) as ed:
            assert (await ed.request("planLsp/prompt", {"text": "go"}))["stopReason"] == "end_turn"
            again = await ed.request("planLsp/prompt", {"text": "more"})
            assert again["stopReason"] == "end_turn", again
