"""What each of the core's updates becomes over ACP (`plan_lsp/acp/translate.py`): a table,
and a property that any update, however odd its fields, translates without raising."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from acp import schema
from hypothesis import given
from hypothesis import strategies as st

from plan_lsp.acp import translate
from plan_lsp.acp.agent import prompt_text
from plan_lsp.protocol.updates import ToolResultUpdate, Update, parse_update

ROOT = Path("/work/project")


def _u(**fields: Any) -> Update:
    """One of the core's updates (the contract's value), from its fields."""
    return parse_update({"runId": "r1", "workspaceUri": ROOT.as_uri(), **fields})


def _call(tool: str, arguments: dict[str, Any], call_id: str = "c1") -> Update:
    return _u(kind="toolCall", tool=tool, toolCallId=call_id, arguments=json.dumps(arguments))


def _result(**fields: Any) -> ToolResultUpdate:
    result = _u(kind="toolResult", toolCallId="c1", tool="edit_file", isError=False, **fields)
    assert isinstance(result, ToolResultUpdate)
    return result


@pytest.mark.parametrize(
    ("tool", "arguments", "kind", "location"),
    [
        ("read_file", {"path": "a.py"}, "read", "/work/project/a.py"),
        ("grep", {"pattern": "x"}, "search", None),
        ("edit_file", {"path": "/abs/b.py", "old_text": "a", "new_text": "b"}, "edit", "/abs/b.py"),
        ("write_file", {"path": "c.md", "content": ""}, "edit", "/work/project/c.md"),
        ("bash", {"command": "ls"}, "execute", None),
        ("exit_plan_mode", {}, "switch_mode", None),
        ("todo_write", {"todos": []}, "think", None),
        ("mcp__git__git_status", {}, "other", None),
    ],
)
def test_tool_calls_have_kinds_and_locations(
    tool: str, arguments: dict[str, Any], kind: str, location: str | None
) -> None:
    (start,) = translate.updates_for(_call(tool, arguments), ROOT)
    assert isinstance(start, schema.ToolCallStart)
    assert (start.tool_call_id, start.kind, start.status) == ("c1", kind, "in_progress")
    assert [loc.path for loc in start.locations or []] == ([location] if location else [])
    assert start.raw_input == (arguments or None)


def test_a_result_with_a_diff_and_a_failure() -> None:
    ok = translate.tool_result(_result(content="edited"), (ROOT / "a.py", "old\n", "new\n"))
    assert ok.status == "completed"
    diff, text = ok.content or []
    assert isinstance(diff, schema.FileEditToolCallContent)
    assert (diff.path, diff.old_text, diff.new_text) == ("/work/project/a.py", "old\n", "new\n")
    assert isinstance(text, schema.ContentToolCallContent)
    failed = translate.tool_result(
        _result(content="no").model_copy(update={"isError": True}),
        (ROOT / "a.py", "old\n", "new\n"),
    )
    assert failed.status == "failed"
    assert [c.type for c in failed.content or []] == ["content"]  # no diff for a failure


def test_a_cut_result_says_how_much_was_left_out() -> None:
    cut = translate.tool_result(_result(content="abc", omitted=5000))
    [text] = cut.content or []
    assert isinstance(text, schema.ContentToolCallContent)
    assert text.content.text == "abc\n… 5,000 more characters (the model read them; not shown)"  # type: ignore[union-attr]


def test_blocked_calls_fail_with_the_reason() -> None:
    payload = _u(
        kind="blocked",
        toolCallId="c9",
        tool="write_file",
        error="tool_not_allowed",
        reason="plan mode: write_file changes the workspace",
    )
    (update, note) = translate.updates_for(payload, ROOT)
    assert isinstance(update, schema.ToolCallProgress)
    assert update.status == "failed"
    shown = update.content[0].content.text  # type: ignore[index,union-attr]
    assert shown == "Refused: plan mode: write_file changes the workspace"
    # Said in the conversation as well, for clients that show a failed call by its title.
    assert note.session_update == "agent_message_chunk"
    assert note.content.text.strip() == shown


@pytest.mark.parametrize(
    ("observation", "shown"),
    [
        (
            {"error": "tool_not_allowed", "tool": "bash", "reason": "rm is not read-only"},
            "Refused: rm is not read-only",
        ),
        (
            {"error": "permission_denied", "tool": "edit_file", "reason": "the user said no"},
            "Denied: the user said no",
        ),
        ({"error": "timeout", "message": "took too long"}, None),  # not a refusal: as it is
    ],
)
def test_a_refused_result_is_said_in_words(observation: dict[str, Any], shown: str | None) -> None:
    content = json.dumps(observation)
    result = translate.tool_result(_result(content=content).model_copy(update={"isError": True}))
    [text] = result.content or []
    assert text.content.text == (shown or content)  # type: ignore[union-attr]


def test_a_refusal_is_said_once_and_the_call_ends_failed() -> None:
    walk = translate.Walk(ROOT)
    walk.live(_call("write_file", {"path": "a.py", "content": "x"}))
    refused = _u(kind="blocked", toolCallId="c1", tool="write_file", error="tool_not_allowed",
                 reason="plan mode")  # fmt: skip
    observation = json.dumps({"error": "tool_not_allowed", "reason": "plan mode"})
    result = _u(kind="toolResult", toolCallId="c1", tool="write_file", isError=True,
                content=observation)  # fmt: skip
    (said, note) = walk.live(refused)
    assert said.status == "failed" and said.content[0].content.text == "Refused: plan mode"
    assert note.content.text.strip() == "Refused: plan mode"
    assert walk.live(result) == []


@pytest.mark.parametrize(
    ("tool", "arguments", "title"),
    [
        ("edit_file", {"path": "src/app.py", "old_text": "a", "new_text": "b"}, "Edit src/app.py"),
        ("write_file", {"path": "/work/project/src/app.py", "content": ""}, "Write src/app.py"),
        ("read_file", {"path": "README.md"}, "Read README.md"),
        ("read_file", {"path": "/etc/hosts"}, "Read /etc/hosts"),
        ("bash", {"command": "git log -1"}, "Run `git log -1`"),
        ("grep", {"pattern": "TODO"}, "Search for `TODO`"),
        ("glob", {"pattern": "**/*.py"}, "Find files `**/*.py`"),
        ("list_dir", {}, "List the folder"),
        ("plan_write", {"content": "# Plan"}, "Write the plan"),
        ("exit_plan_mode", {}, "Submit the plan for approval"),
        ("todo_write", {"todos": []}, "Update the checklist"),
        ("mcp__git__git_status", {"path": "x"}, "git: git_status x"),
    ],
)
def test_titles_a_person_reads(tool: str, arguments: dict[str, Any], title: str) -> None:
    (start,) = translate.updates_for(_call(tool, arguments), ROOT)
    assert start.title == title
    assert start.field_meta == {"planLsp": {"tool": tool}}


def test_a_permission_request_finds_the_call_it_is_about() -> None:
    walk = translate.Walk(ROOT)
    walk.live(_call("edit_file", {"path": "a.py"}, "c1"))
    walk.live(_call("edit_file", {"path": "b.py"}, "c2"))
    assert walk.call_for("edit_file", {"path": "a.py"}) == "c1"
    assert walk.call_for("edit_file", {"path": "other"}) == "c2"  # the latest of the tool
    assert walk.call_for("bash", {}) is None
    walk.live(_u(kind="toolResult", toolCallId="c1", tool="edit_file", isError=False, content=""))
    assert walk.call_for("edit_file", {"path": "a.py"}) == "c2"  # an ended call is not asked on
    stopped = _u(
        kind="cancelledCalls",
        calls=[{"callId": "c2", "tool": "edit_file", "runId": "r1"}],
        reason="x",
    )
    walk.live(stopped)
    assert walk.call_for("edit_file", {"path": "b.py"}) is None


def test_todos_are_plan_entries_the_whole_list_each_time() -> None:
    todos = [
        {"content": "one", "status": "completed"},
        {"content": "two", "status": "in_progress"},
        {"content": "three", "status": "pending"},
    ]
    (update,) = translate.updates_for(_u(kind="todos", todos=todos), ROOT)
    assert isinstance(update, schema.AgentPlanUpdate)
    assert [(e.content, e.status) for e in update.entries] == [
        ("one", "completed"),
        ("two", "in_progress"),
        ("three", "pending"),
    ]


def test_mode_changes_update_the_mode_and_the_config_option() -> None:
    changed = _u(
        kind="modeChanged",
        mode="build",
        permissionMode="ask",
        planStatus="approved",
        cause="plan_approved",
    )
    mode, option = translate.updates_for(changed, ROOT)
    assert isinstance(mode, schema.CurrentModeUpdate) and mode.current_mode_id == "build"
    assert isinstance(option, schema.ConfigOptionUpdate)
    select = option.config_options[0]
    select = getattr(select, "root", select)
    assert (select.id, select.category, select.current_value) == ("mode", "mode", "build")


def test_usage_from_the_state() -> None:
    def state(**usage: Any) -> Update:
        return _u(
            kind="state",
            state={
                "sessionId": "s1",
                "mode": "plan",
                "permissionMode": "ask",
                "planUri": None,
                "planStatus": "none",
                "outcome": "never_planned",
                "todos": [],
                "running": False,
                "usage": usage,
            },
        )

    used = state(contextTokens=1200, contextWindow=32768, costUsd=0.25)
    (update,) = translate.updates_for(used, ROOT)
    assert isinstance(update, schema.UsageUpdate)
    assert (update.used, update.size) == (1200, 32768)
    assert update.cost is not None and update.cost.amount == 0.25
    assert translate.updates_for(state(), ROOT) == []  # no context window known: no usage
    # A walk tells the usage again only when a figure changed.
    walk = translate.Walk(ROOT)
    more = state(contextTokens=1500, contextWindow=32768, costUsd=0.25)
    told = [len(walk.live(x)) for x in (used, used, state(), more, more, used)]
    assert told == [1, 0, 0, 1, 0, 1]


def test_replayed_prompts_are_the_users_messages() -> None:
    prompt = _u(kind="prompt", origin="prompt", text="do it")
    assert translate.updates_for(prompt, ROOT) == []  # live: the client shows its own prompt
    (update,) = translate.updates_for(prompt, ROOT, replay=True)
    assert isinstance(update, schema.UserMessageChunk)


def test_prompt_blocks_become_text() -> None:
    blocks = [
        schema.TextContentBlock(type="text", text="look at"),
        schema.ResourceContentBlock(type="resource_link", uri="file:///w/a.py", name="a.py"),
        schema.EmbeddedResourceContentBlock(
            type="resource",
            resource=schema.TextResourceContents(uri="file:///w/b.py", text="x = 1"),
        ),
    ]
    assert prompt_text(blocks) == "look at\n@file:///w/a.py\n\nfile:///w/b.py:\n```\nx = 1\n```\n"


@given(tool=st.text(max_size=12), arguments=st.text(max_size=60), call_id=st.text(max_size=8))
def test_any_tool_call_translates_whatever_the_model_sent(
    tool: str, arguments: str, call_id: str
) -> None:
    """The model's arguments are text the contract does not check: any of them becomes a
    tool call card (or a subagent's thought), and its result follows, never raising."""
    walk = translate.Walk(ROOT)
    call = _u(kind="toolCall", tool=tool, toolCallId=call_id or None, arguments=arguments)
    result = _u(kind="toolResult", toolCallId=call_id, tool=tool, isError=False, content="")
    try:
        assert len(walk.live(call)) == 1
        assert len(walk.live(result)) == 1
    except Exception as exc:
        pytest.fail(f"{tool!r} with {arguments!r} raised {exc!r}")
