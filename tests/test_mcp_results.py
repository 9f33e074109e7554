"""What the model reads from a `tools/call` answer."""

from __future__ import annotations

import json

from plan_lsp.tools.bash import OUTPUT_CAP_CHARS
from plan_lsp.tools.bash_process import cap_text
from plan_lsp.tools.mcp.results import observation

NAME = "mcp__srv__t"


def test_text_blocks_are_joined() -> None:
    result = observation(
        NAME, {"content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]}
    )
    assert result.content == "one\ntwo" and not result.is_error


def test_structured_content_becomes_json_text() -> None:
    result = observation(NAME, {"content": [], "structuredContent": {"files": 2}})
    assert json.loads(result.content) == {"files": 2}


def test_structured_content_already_in_text_is_not_repeated() -> None:
    result = observation(
        NAME,
        {"content": [{"type": "text", "text": '{"a": 1}'}], "structuredContent": {"a": 1}},
    )
    assert result.content == '{"a": 1}'


def test_binary_content_is_summarised() -> None:
    result = observation(
        NAME,
        {
            "content": [
                {"type": "image", "data": "QUJD" * 1000, "mimeType": "image/png"},
                {"type": "audio", "data": "QUJD", "mimeType": "audio/wav"},
                {"type": "resource_link", "uri": "file:///a.txt", "name": "a.txt"},
                {"type": "resource", "resource": {"uri": "file:///b", "text": "inline"}},
                {
                    "type": "resource",
                    "resource": {"uri": "file:///c", "blob": "QUJD", "mimeType": "x/y"},
                },
                {"type": "mystery"},
            ]
        },
    )
    lines = result.content.splitlines()
    assert lines[0] == "[image: image/png, 3,000 bytes; not shown]"
    assert lines[1] == "[audio: audio/wav, 3 bytes; not shown]"
    assert lines[2] == "[resource link: a.txt <file:///a.txt>]"
    assert lines[3:5] == ["[resource <file:///b>]", "inline"]
    assert lines[5] == "[resource <file:///c>: x/y, 3 bytes; not shown]"
    assert lines[6] == "[mystery content; not shown]"
    assert "QUJD" not in result.content


def test_is_error_becomes_a_tool_error_with_the_servers_words() -> None:
    result = observation(
        NAME, {"content": [{"type": "text", "text": "disk on fire"}], "isError": True}
    )
    assert result.is_error
    payload = json.loads(result.content)
    assert payload["error"] == "tool_error" and payload["message"] == "disk on fire"
    assert payload["tool"] == NAME


def test_empty_and_malformed_answers() -> None:
    assert observation(NAME, {}).content == "(no content)"
    assert observation(NAME, {"content": "nope"}).content == "(no content)"
    assert observation(NAME, {"content": [1, None]}).content == "(no content)"


def test_output_is_capped_like_shell_output() -> None:
    big = "a" * OUTPUT_CAP_CHARS + "b" * OUTPUT_CAP_CHARS
    result = observation(NAME, {"content": [{"type": "text", "text": big}]})
    assert len(result.content) < OUTPUT_CAP_CHARS + 200
    assert result.content.startswith("aaa") and result.content.endswith("bbb")
    assert "cut from the middle" in result.content
    assert result.data is not None and result.data["truncated"] is True
    assert cap_text("short", OUTPUT_CAP_CHARS) == ("short", False)
