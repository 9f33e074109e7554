"""MCP tool names and safety labels, and how both gates and the permission rules treat the
definitions: table tests and properties."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plan_lsp.policy.definitions import definitions_for, mode_refusal
from plan_lsp.policy.execution import ExecutionGate
from plan_lsp.policy.permissions import PermissionEngine
from plan_lsp.policy.safety import Safety, ToolDefinition
from plan_lsp.protocol.state import PermissionMode, WorkMode
from plan_lsp.session import Actor, Session, StateStore
from plan_lsp.tools.mcp.adapter import (
    MAX_DESCRIPTION_CHARS,
    ListedTool,
    adapt_tools,
    decide_safety,
    qualified_name,
)
from plan_lsp.tools.mcp.config import SERVER_NAME, McpServerConfig
from tests.test_execution_gate import FakePort

RO = {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False}


def server(**extra: Any) -> McpServerConfig:
    return McpServerConfig.model_validate({"name": "git", "command": ["x"], **extra})


# -- names -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "expected"),
    [
        ("git_status", "mcp__git__git_status"),
        ("git.status", "mcp__git__git_status"),
        ("read file/é", "mcp__git__read_file__"),
    ],
)
def test_names(tool: str, expected: str) -> None:
    assert qualified_name("git", tool) == expected


def test_long_names_keep_a_hash_and_stay_distinct() -> None:
    a, b = qualified_name("git", "x" * 80 + "a"), qualified_name("git", "x" * 80 + "b")
    assert len(a) == len(b) == 64 and a != b


server_names = st.from_regex(SERVER_NAME, fullmatch=True).filter(lambda s: len(s) <= 24)


@given(server_names, st.text(min_size=1, max_size=200))
def test_every_name_is_one_providers_accept_and_names_its_server(name: str, tool: str) -> None:
    qualified = qualified_name(name, tool)
    assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", qualified)  # what model providers accept
    server_name, sep, rest = qualified.removeprefix("mcp__").partition("__")
    assert qualified.startswith("mcp__") and sep and rest and server_name == name


@given(st.lists(st.text(min_size=1, max_size=80), max_size=12))
def test_two_tools_never_share_a_name(names: list[str]) -> None:
    adapted, warnings = adapt_tools(server(), [ListedTool(n) for n in names])
    qualified = [a.definition.name for a in adapted]
    assert len(qualified) == len(set(qualified))
    assert len(adapted) + sum("both become" in w for w in warnings) == len(names)


def test_collision_is_refused_not_merged() -> None:
    adapted, warnings = adapt_tools(server(), [ListedTool("a.b"), ListedTool("a_b")])
    assert [a.mcp_name for a in adapted] == ["a.b"]
    assert "both become mcp__git__a_b" in warnings[0]


def test_schema_description_and_timeout() -> None:
    listed = [
        ListedTool("ok", "d " * 5000, {"properties": {"x": {"type": "string"}}}),
        ListedTool("array", input_schema={"type": "array"}),
        ListedTool("huge", input_schema={"type": "object", "description": "x" * 60_000}),
    ]
    adapted, warnings = adapt_tools(server(timeout_s=7), listed)
    (ok,) = adapted
    assert ok.definition.input_schema["type"] == "object"
    assert ok.definition.description.startswith("[MCP server 'git'] d d")
    assert len(ok.definition.description) < MAX_DESCRIPTION_CHARS + 40
    assert ok.definition.timeout_s > 7
    assert any("'array' is not offered" in w for w in warnings)
    assert any("'huge' is not offered" in w for w in warnings)


def test_unknown_read_only_tool_is_warned_about() -> None:
    _, warnings = adapt_tools(server(read_only_tools=["git_stat"]), [ListedTool("git_status")])
    assert warnings == [
        "MCP server 'git': read_only_tools names 'git_stat', which the server does not list"
    ]


# -- safety ----------------------------------------------------------------------------------

ABSENT = None


@pytest.mark.parametrize(
    ("listed", "trusted", "annotations", "expected"),
    [
        # the user's list decides, whatever the server says
        (True, False, None, Safety.READ_ONLY),
        (True, False, {"readOnlyHint": False, "destructiveHint": True}, Safety.READ_ONLY),
        # untrusted hints are never believed
        (False, False, RO, Safety.SIDE_EFFECT),
        (False, False, None, Safety.SIDE_EFFECT),
        # trusted: read-only, not destructive, not open-world, all said explicitly
        (False, True, RO, Safety.READ_ONLY),
        (False, True, {**RO, "idempotentHint": False}, Safety.READ_ONLY),
        (False, True, {"readOnlyHint": True}, Safety.SIDE_EFFECT),
        (False, True, {"readOnlyHint": True, "destructiveHint": False}, Safety.SIDE_EFFECT),
        (False, True, {"readOnlyHint": True, "openWorldHint": False}, Safety.SIDE_EFFECT),
        (False, True, {**RO, "destructiveHint": True}, Safety.SIDE_EFFECT),
        (False, True, {**RO, "openWorldHint": True}, Safety.SIDE_EFFECT),
        (False, True, {**RO, "readOnlyHint": False}, Safety.SIDE_EFFECT),
        (False, True, {**RO, "readOnlyHint": "true"}, Safety.SIDE_EFFECT),
        (False, True, None, Safety.SIDE_EFFECT),
        (False, True, {}, Safety.SIDE_EFFECT),
    ],
)
def test_safety_table(
    listed: bool, trusted: bool, annotations: dict[str, Any] | None, expected: Safety
) -> None:
    config = server(read_only_tools=["t"] if listed else [], trust_read_only_hint=trusted)
    assert decide_safety(config, "t", annotations) is expected


hints = st.one_of(st.none(), st.booleans(), st.text(max_size=3), st.integers(0, 1))
annotation_maps = st.one_of(
    st.none(),
    st.dictionaries(
        st.sampled_from(["readOnlyHint", "destructiveHint", "openWorldHint", "idempotentHint"]),
        hints,
    ),
)


@given(annotation_maps, st.booleans(), st.booleans())
def test_read_only_exactly_when_the_user_said_so(
    annotations: dict[str, Any] | None, listed: bool, trusted: bool
) -> None:
    config = server(read_only_tools=["t"] if listed else [], trust_read_only_hint=trusted)
    safety = decide_safety(config, "t", annotations)
    a = annotations or {}
    proven = (
        a.get("readOnlyHint") is True
        and a.get("destructiveHint") is False
        and a.get("openWorldHint") is False
    )
    assert (safety is Safety.READ_ONLY) == (listed or (trusted and proven))
    assert safety in (Safety.READ_ONLY, Safety.SIDE_EFFECT)


@given(annotation_maps, st.booleans(), st.sampled_from(list(WorkMode)))
def test_both_gates_agree_on_mcp_tools(
    annotations: dict[str, Any] | None, trusted: bool, mode: WorkMode
) -> None:
    (adapted,), _ = adapt_tools(
        server(trust_read_only_hint=trusted), [ListedTool("t", annotations=annotations)]
    )
    definition = adapted.definition
    shown = definitions_for([definition], mode, None, "classified") == [definition]
    assert shown == (mode_refusal(definition, mode, "classified") is None)
    if mode is WorkMode.PLAN:
        assert shown == (definition.safety is Safety.READ_ONLY)
    else:
        assert shown


# -- execution gate and permission rules -----------------------------------------------------


def _mcp(name: str, safety: Safety) -> ToolDefinition:
    return ToolDefinition(name=name, description="", input_schema={"type": "object"}, safety=safety)


COMMIT = _mcp("mcp__git__git_commit", Safety.SIDE_EFFECT)
ADD = _mcp("mcp__git__git_add", Safety.SIDE_EFFECT)
STATUS = _mcp("mcp__git__git_status", Safety.READ_ONLY)
OTHER = _mcp("mcp__docs__publish", Safety.SIDE_EFFECT)


@pytest.mark.parametrize(
    ("rules", "definition", "verdict"),
    [
        ({}, COMMIT, "ask"),
        ({}, STATUS, "allow"),
        ({"allow": ["mcp__git__git_commit"]}, COMMIT, "allow"),
        ({"allow": ["mcp__git__git_commit"]}, ADD, "ask"),
        ({"allow": ["mcp__git__*"]}, ADD, "allow"),
        ({"allow": ["mcp__git__*"]}, OTHER, "ask"),
        ({"allow": ["mcp__*"]}, OTHER, "allow"),
        ({"allow": ["mcp__git__*"], "deny": ["mcp__git__git_commit"]}, COMMIT, "deny"),
        ({"allow": ["mcp__git__*"], "ask": ["mcp__git__git_add"]}, ADD, "ask"),
        ({"deny": ["mcp__git__*"]}, STATUS, "deny"),
        # an argument pattern cannot match an MCP call: no primary argument is known
        ({"allow": ["mcp__git__git_commit(x)"]}, COMMIT, "ask"),
    ],
)
def test_permission_rules_name_mcp_tools(
    rules: dict[str, list[str]], definition: ToolDefinition, verdict: str
) -> None:
    engine = PermissionEngine(**rules)
    decision = engine.decide(
        definition, {"message": "x"}, permission_mode=PermissionMode.ASK, work_mode=WorkMode.BUILD
    )
    assert decision.verdict == verdict


@pytest.mark.parametrize("pmode", list(PermissionMode))
async def test_plan_mode_refuses_mcp_side_effects_whatever_the_rules(
    tmp_path: Path, pmode: PermissionMode
) -> None:
    session = Session(StateStore(tmp_path / "s.db"), tmp_path, tmp_path / "plans")
    session.set_permission_mode(pmode, Actor.USER)
    port = FakePort("allow_always")
    gate = ExecutionGate(session, PermissionEngine(allow=["mcp__*"]), port)
    refused = await gate.check(COMMIT, {}, "run", None)
    assert not refused.allowed and refused.observation is not None
    assert refused.observation["error"] == "tool_not_allowed"
    assert refused.observation["tool"] == "mcp__git__git_commit"
    assert (await gate.check(STATUS, {}, "run", None)).allowed
    assert port.requests == []
