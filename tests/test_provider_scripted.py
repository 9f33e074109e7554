"""The scripted provider and the provider factory."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from plan_lsp.providers.base import (
    ChatMessage,
    Finish,
    ModelRequest,
    ProviderError,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallStart,
)
from plan_lsp.providers.factory import make_provider
from plan_lsp.providers.scripted import ScriptedProvider
from plan_lsp.providers.transcript import TranscriptProvider
from tests.fake_model_servers import collect


def request(run_id: str = "run-1") -> ModelRequest:
    return ModelRequest(run_id=run_id, mode="plan", messages=[ChatMessage("user", "go")], tools=[])


def write_script(tmp_path: Path, script: Any) -> Path:
    path = tmp_path / "script.json"
    path.write_text(script if isinstance(script, str) else json.dumps(script), encoding="utf-8")
    return path


async def test_text_and_tool_calls_stream_in_chunks(tmp_path: Path) -> None:
    args = {"path": "README.md", "start_line": 1}
    script = {
        "chunk": 4,
        "turns": [
            {
                "text": "Reading first.",
                "tool_calls": [
                    {"name": "read_file", "arguments": args},
                    {"name": "list_dir", "arguments": {}},
                ],
            }
        ],
    }
    provider = ScriptedProvider(write_script(tmp_path, script))
    summary = await collect(provider.stream(request()))

    texts = [e.text for e in summary.events if isinstance(e, TextDelta)]
    assert texts == ["Read", "ing ", "firs", "t."]
    arg_text = json.dumps(args)
    first_call_deltas = [
        e.delta for e in summary.events if isinstance(e, ToolCallArgsDelta) and e.index == 0
    ]
    assert first_call_deltas == [arg_text[i : i + 4] for i in range(0, len(arg_text), 4)]
    starts = [e for e in summary.events if isinstance(e, ToolCallStart)]
    assert starts == [
        ToolCallStart(index=0, id="call_1_0", name="read_file"),
        ToolCallStart(index=1, id="call_1_1", name="list_dir"),
    ]
    assert summary.tool_calls == [
        ("call_1_0", "read_file", arg_text),
        ("call_1_1", "list_dir", "{}"),
    ]
    finish = summary.events[-1]
    assert isinstance(finish, Finish) and finish.reason == "tool_calls"
    # Usage is reported: the request's and the answer's tokens, estimated.
    assert finish.usage.input_tokens > 0 and finish.usage.output_tokens > 0
    assert sum(isinstance(e, Finish) for e in summary.events) == 1


async def test_default_chunk_is_16_and_text_only_turn_stops(tmp_path: Path) -> None:
    text = "x" * 40
    provider = ScriptedProvider(write_script(tmp_path, {"turns": [{"text": text}]}))
    summary = await collect(provider.stream(request()))
    assert [len(e.text) for e in summary.events if isinstance(e, TextDelta)] == [16, 16, 8]
    assert summary.finish is not None and summary.finish.reason == "stop"
    assert summary.tool_calls == []


async def test_string_arguments_are_streamed_verbatim(tmp_path: Path) -> None:
    broken = '{"path": "READ'
    script = {"chunk": 5, "turns": [{"tool_calls": [{"name": "read_file", "arguments": broken}]}]}
    provider = ScriptedProvider(write_script(tmp_path, script))
    summary = await collect(provider.stream(request()))
    assert summary.tool_calls == [("call_1_0", "read_file", broken)]
    assert summary.finish is not None and summary.finish.reason == "tool_calls"


async def test_turns_are_taken_in_order_of_stream_calls_across_runs(tmp_path: Path) -> None:
    script = {"turns": [{"text": "first"}, {"text": "second"}, {"text": "third"}]}
    provider = ScriptedProvider(write_script(tmp_path, script))
    # The subagent's request is made second but iterated first: the call order decides.
    parent = provider.stream(request("parent"))
    child = provider.stream(request("child"))
    assert (await collect(child)).text == "second"
    assert (await collect(parent)).text == "first"
    assert (await collect(provider.stream(request("other")))).text == "third"
    assert provider.calls == 3


async def test_past_the_last_turn_the_model_says_end_of_script(tmp_path: Path) -> None:
    provider = ScriptedProvider(write_script(tmp_path, {"turns": [{"text": "only"}]}))
    assert (await collect(provider.stream(request()))).text == "only"
    for _ in range(2):
        summary = await collect(provider.stream(request()))
        assert summary.text == "(end of script)"
        assert summary.finish is not None and summary.finish.reason == "stop"
        assert summary.tool_calls == []


async def test_tool_call_ids_name_the_turn(tmp_path: Path) -> None:
    call = {"name": "glob", "arguments": {"pattern": "*.py"}}
    script = {"turns": [{"text": "a"}, {"tool_calls": [call, call]}]}
    provider = ScriptedProvider(write_script(tmp_path, script))
    await collect(provider.stream(request()))
    summary = await collect(provider.stream(request()))
    assert [c[0] for c in summary.tool_calls] == ["call_2_0", "call_2_1"]


async def test_error_turn_raises_after_streaming_what_it_has(tmp_path: Path) -> None:
    script = {
        "chunk": 100,
        "turns": [
            {
                "text": "partial",
                "error": {"kind": "rate_limit", "message": "slow down", "retry_after": 2.5},
            },
            {"text": "recovered"},
        ],
    }
    provider = ScriptedProvider(write_script(tmp_path, script))
    seen: list[Any] = []
    with pytest.raises(ProviderError) as info:
        async for event in provider.stream(request()):
            seen.append(event)
    assert seen == [TextDelta("partial")]
    assert (info.value.kind, info.value.message, info.value.retry_after) == (
        "rate_limit",
        "slow down",
        2.5,
    )
    assert (await collect(provider.stream(request()))).text == "recovered"


async def test_delay_ms_slows_the_stream_down(tmp_path: Path) -> None:
    script = {"chunk": 1, "turns": [{"text": "abcde", "delay_ms": 40}, {"text": "fghij"}]}
    provider = ScriptedProvider(write_script(tmp_path, script))
    started = time.monotonic()
    assert (await collect(provider.stream(request()))).text == "abcde"
    # Four pauses between five deltas.
    assert time.monotonic() - started >= 0.16
    assert (await collect(provider.stream(request()))).text == "fghij"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", "not valid JSON"),
        ("[]", "wrong shape"),
        (json.dumps({"chunk": 8}), "turns"),
        (json.dumps({"turns": [{"tool_calls": [{"arguments": {}}]}]}), "turns.0.tool_calls.0.name"),
        (json.dumps({"chunk": 0, "turns": []}), "chunk"),
        (json.dumps({"turns": [{"txt": "typo"}]}), "turns.0.txt"),
        (json.dumps({"turns": [{"error": {"kind": "nope", "message": "m"}}]}), "error.kind"),
        (json.dumps({"turns": [{"text": "a", "delay_ms": -1}]}), "delay_ms"),
    ],
)
def test_bad_script_is_a_config_error_naming_the_problem(
    tmp_path: Path, content: str, expected: str
) -> None:
    path = write_script(tmp_path, content)
    with pytest.raises(ProviderError) as info:
        ScriptedProvider(path)
    assert info.value.kind == "config"
    assert expected in info.value.message
    assert str(path) in info.value.message


def test_missing_script_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ProviderError) as info:
        ScriptedProvider(tmp_path / "nope.json")
    assert info.value.kind == "config"
    assert "cannot read script file" in info.value.message


async def test_factory_builds_scripted_provider(tmp_path: Path) -> None:
    path = write_script(tmp_path, {"turns": [{"text": "hi"}]})
    provider = make_provider("scripted", script=str(path))
    assert isinstance(provider, ScriptedProvider)
    assert provider.name == "scripted"
    assert (await collect(provider.stream(request()))).text == "hi"


def test_factory_wraps_in_transcript_when_asked(tmp_path: Path) -> None:
    path = write_script(tmp_path, {"turns": []})
    provider = make_provider("scripted", script=path, transcript=tmp_path / "t.jsonl")
    assert isinstance(provider, TranscriptProvider)
    assert isinstance(provider.inner, ScriptedProvider)
    assert provider.name == "scripted"


@pytest.mark.parametrize(
    ("name", "kwargs", "expected"),
    [
        ("scripted", {}, "--script"),
        ("gemini", {}, "unknown provider 'gemini'"),
        ("openai", {"base_url": "localhost:11434/v1"}, "must start with http"),
        ("anthropic", {"base_url": "ftp://x"}, "must start with http"),
    ],
)
def test_factory_config_errors(name: str, kwargs: dict[str, Any], expected: str) -> None:
    with pytest.raises(ProviderError) as info:
        make_provider(name, **kwargs)
    assert info.value.kind == "config"
    assert expected in info.value.message


@pytest.mark.process
def test_importing_providers_does_not_import_sdks() -> None:
    code = (
        "import sys, plan_lsp.providers\n"
        "loaded = [m for m in ('openai', 'anthropic') if m in sys.modules]\n"
        "print(','.join(loaded))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == ""


# -- model-speed streaming ---------------------------------------------------------------


def test_a_pace_streams_the_whole_text_in_deltas_of_its_sizes_at_its_speed() -> None:
    import random

    from plan_lsp.providers.scripted import Pace

    pace = Pace(chars_per_second=1000, chunk=(2, 9), jitter=0.5,
                pause_every_chars=(100, 200), pause_ms=(400, 900), seed=3)  # fmt: skip
    text = "x" * 5000
    pieces = list(pace.pieces(text, random.Random("3:1")))
    assert "".join(p for _, p in pieces) == text
    assert all(2 <= len(p) for _, p in pieces[:-1]) and all(len(p) <= 9 for _, p in pieces)
    waits = [w for w, _ in pieces]
    pauses = [w for w in waits if w >= 0.4]
    # a pause after every 100-200 characters, each longer than any editor's debounce
    assert 5000 // 200 - 1 <= len(pauses) <= 5000 // 100 + 1
    streaming = sum(w for w in waits if w < 0.4)
    # about 1000 characters a second between the pauses (±jitter averages out)
    assert 4.0 < streaming < 6.0
    # the same seed streams the same way
    assert pieces == list(pace.pieces(text, random.Random("3:1")))


async def test_a_paced_turn_records_its_timeline_and_a_turn_can_opt_out(tmp_path: Path) -> None:
    timeline = tmp_path / "timeline.jsonl"
    args = {"content": "# Plan\n" + "step\n" * 20}
    script = {
        "pace": {"chars_per_second": 20000, "chunk": [3, 7], "pause_every_chars": [50, 60],
                 "pause_ms": [1, 2]},
        "timeline": str(timeline),
        "turns": [
            {"text": "Planning.", "tool_calls": [{"name": "plan_write", "arguments": args}]},
            {"text": "fast turn", "pace": None},
        ],
    }  # fmt: skip
    provider = ScriptedProvider(write_script(tmp_path, script))
    first = await collect(provider.stream(request()))
    deltas = [e.delta for e in first.events if isinstance(e, ToolCallArgsDelta)]
    assert "".join(deltas) == json.dumps(args)
    assert all(3 <= len(d) <= 7 for d in deltas[:-1])
    lines = [json.loads(line) for line in timeline.read_text().splitlines()]
    calls = [line for line in lines if line["kind"] == "args"]
    assert [c["sent"] for c in calls] == [
        sum(len(d) for d in deltas[: i + 1]) for i in range(len(deltas))
    ]
    assert all(c["turn"] == 1 and c["call"] == 0 for c in calls)
    assert [c["t"] for c in calls] == sorted(c["t"] for c in calls)

    second = await collect(provider.stream(request()))
    texts = [e.text for e in second.events if isinstance(e, TextDelta)]
    assert texts == ["fast turn"]  # the script's chunk of 16: no pace
