"""Each built-in tool is one definition: its argument model gives the schema the model is
offered and the check of what the model sends (a refusal names the field)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from plan_lsp.agent.plan_tools import ENTER_PLAN_MODE, EXIT_PLAN_MODE, PLAN_WRITE
from plan_lsp.agent.recall import DEFINITION as RECALL_OUTPUT
from plan_lsp.agent.requests import RequestFrames
from plan_lsp.agent.subagent import TASK
from plan_lsp.config import Config
from plan_lsp.policy.arguments import model_schema, schema_error
from plan_lsp.policy.execution import GateDecision
from plan_lsp.policy.safety import ArgumentsRefused, Safety, ToolDefinition
from plan_lsp.protocol.state import WorkMode
from plan_lsp.session import Actor, Session, StateStore
from plan_lsp.tools.base import Tool, ToolContext, ToolResult
from plan_lsp.tools.registry import ToolRegistry, builtin_registry
from plan_lsp.tools.runner import ToolRunner

OURS = [
    *builtin_registry().definitions(),
    PLAN_WRITE,
    EXIT_PLAN_MODE,
    ENTER_PLAN_MODE,
    RECALL_OUTPUT,
]
EVERY = [*(pytest.param(d, id=d.name) for d in [*OURS, TASK])]
NAMES = [pytest.param(d, id=d.name) for d in OURS]


def _objects(schema: Any) -> list[dict[str, Any]]:
    """Every object schema inside `schema`."""
    found: list[dict[str, Any]] = []
    if isinstance(schema, dict):
        if schema.get("type") == "object":
            found.append(schema)
        for value in schema.values():
            found += _objects(value)
    elif isinstance(schema, list):
        for value in schema:
            found += _objects(value)
    return found


def _keys(schema: Any) -> set[str]:
    """Every keyword used in `schema` (property names excluded)."""
    if isinstance(schema, list):
        return set().union(*(_keys(s) for s in schema)) if schema else set()
    if not isinstance(schema, dict):
        return set()
    keys = set(schema) - {"properties"}
    for name, value in schema.items():
        if name == "properties" and isinstance(value, dict):
            keys |= set().union(*(_keys(v) for v in value.values())) if value else set()
        else:
            keys |= _keys(value)
    return keys


@pytest.mark.parametrize("definition", EVERY)
def test_the_schema_is_the_argument_models(definition: ToolDefinition) -> None:
    assert definition.arguments is not None, f"{definition.name} has no argument model"
    assert definition.input_schema == model_schema(definition.arguments)


@pytest.mark.parametrize("definition", [*NAMES, pytest.param(TASK, id=TASK.name)])
def test_the_schema_is_self_contained_and_every_provider_takes_it(
    definition: ToolDefinition,
) -> None:
    schema = definition.input_schema
    assert schema["type"] == "object"
    # No `title` noise, no `$ref`/`$defs`, no `anyOf` with a null branch.
    assert not {"title", "$ref", "$defs", "definitions", "anyOf", "oneOf"} & _keys(schema)
    for obj in _objects(schema):
        assert obj.get("additionalProperties") is False, json.dumps(obj)
        for name in obj.get("required", []):
            assert name in obj["properties"]
        for sub in obj.get("properties", {}).values():
            assert "type" in sub or "enum" in sub, json.dumps(sub)


async def test_the_model_is_offered_exactly_the_definitions_schema(tmp_path: Path) -> None:
    registry = builtin_registry()
    for definition in (PLAN_WRITE, EXIT_PLAN_MODE, ENTER_PLAN_MODE, RECALL_OUTPUT):
        registry.register(Tool(definition, _never))
    session = Session(StateStore(tmp_path / "state.db"), tmp_path, tmp_path / "plans")
    try:
        frames = RequestFrames(session, Config(), registry, "classified")
        offered = {s.name: s.parameters for s in frames.tool_specs(None)}
        session.set_mode(WorkMode.BUILD, Actor.USER)
        offered |= {s.name: s.parameters for s in frames.tool_specs(None)}
    finally:
        session.store.close()
    by_name = {d.name: d for d in OURS}
    assert set(offered) == set(by_name)
    for name, parameters in offered.items():
        arguments = by_name[name].arguments
        assert arguments is not None
        assert parameters == model_schema(arguments)


async def _never(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    raise AssertionError("not run")


# -- what the model sends -------------------------------------------------------------------


def _example(schema: dict[str, Any]) -> Any:
    """A value that fits `schema` (the required fields only)."""
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties", {})
        return {name: _example(properties[name]) for name in schema.get("required", [])}
    if kind == "array":
        return [_example(schema["items"]) for _ in range(schema.get("minItems", 0))]
    return {"string": "x", "integer": 1, "number": 1.5, "boolean": True}[kind]


def _wrong(schema: dict[str, Any]) -> Any:
    """A value of another JSON type than `schema` asks for."""
    return 7 if schema.get("type") in ("object", "array", "string") or "enum" in schema else {}


def _cases() -> list[Any]:
    cases = []
    for definition in OURS:
        schema = definition.input_schema
        for name, sub in schema.get("properties", {}).items():
            wrong = {**_example(schema), name: _wrong(sub)}
            cases.append(pytest.param(definition, wrong, name, id=f"{definition.name}-{name}"))
        for name in schema.get("required", []):
            missing = {k: v for k, v in _example(schema).items() if k != name}
            cases.append(pytest.param(definition, missing, name, id=f"{definition.name}-no-{name}"))
        unknown = {**_example(schema), "surplus": 1}
        cases.append(pytest.param(definition, unknown, "surplus", id=f"{definition.name}-extra"))
    return cases


class _AllowAll:
    def __init__(self) -> None:
        self.checked: list[dict[str, Any]] = []

    async def check(
        self, definition: ToolDefinition, arguments: dict[str, Any], *a: Any, **k: Any
    ) -> GateDecision:
        self.checked.append(arguments)
        return GateDecision(True)

    def current_mode(self) -> WorkMode:
        return WorkMode.BUILD


def _ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(
        workspace_roots=[tmp_path],
        plans_dir=tmp_path / "plans",
        run_id="r1",
        editor=None,  # type: ignore[arg-type]
        user=None,  # type: ignore[arg-type]
        emit=lambda kind, payload: None,
    )


@pytest.mark.parametrize(("definition", "arguments", "field"), _cases())
async def test_invalid_arguments_are_refused_naming_the_field(
    tmp_path: Path, definition: ToolDefinition, arguments: dict[str, Any], field: str
) -> None:
    ran: list[dict[str, Any]] = []

    async def run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        ran.append(args)
        return ToolResult(content="ran")

    gate = _AllowAll()
    runner = ToolRunner(ToolRegistry([Tool(definition, run)]), gate)
    result = await runner.call(definition.name, json.dumps(arguments), _ctx(tmp_path))
    assert result.is_error and result.data is not None
    assert result.data["error"] == "invalid_arguments"
    assert f"'{field}" in result.data["message"], result.data["message"]
    assert result.data["message"].startswith(f"{definition.name}: ")
    # Refused before the gate or the tool saw it.
    assert gate.checked == [] and ran == []


@pytest.mark.parametrize("definition", NAMES)
async def test_fitting_arguments_reach_the_gate_and_the_tool(
    tmp_path: Path, definition: ToolDefinition
) -> None:
    ran: list[dict[str, Any]] = []

    async def run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        ran.append(args)
        return ToolResult(content="ran")

    gate = _AllowAll()
    runner = ToolRunner(ToolRegistry([Tool(definition, run)]), gate)
    arguments = _example(definition.input_schema)
    result = await runner.call(definition.name, json.dumps(arguments), _ctx(tmp_path))
    assert result.content == "ran"
    assert gate.checked == ran == [arguments]


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({}, "missing required field 'questions'"),
        ({"questions": []}, "'questions' needs at least 1 item(s)"),
        (
            {"questions": [{"id": "a", "text": "t"}]},
            "missing required field 'questions[0].options'",
        ),
        (
            {"questions": [{"id": "", "text": "t", "options": ["y"]}]},
            "'questions[0].id' must not be empty",
        ),
        (
            {"questions": [{"id": "a", "text": "t", "options": ["y"], "more": 1}]},
            "unknown field 'questions[0].more' (known fields: id, text, options, multiple)",
        ),
        (
            {"questions": [{"id": "a", "text": "t", "options": [3]}]},
            "'questions[0].options[0]' must be string, not integer",
        ),
    ],
)
def test_nested_refusals_name_the_nested_field(arguments: dict[str, Any], words: str) -> None:
    ask_user = builtin_registry().get("ask_user")
    assert ask_user is not None
    with pytest.raises(ArgumentsRefused) as refused:
        ask_user.definition.check_arguments(arguments)
    assert str(refused.value) == words


@pytest.mark.parametrize(
    ("name", "arguments", "words"),
    [
        ("read_file", {"path": "a", "start_line": 0}, "'start_line' must be at least 1"),
        ("read_file", {"path": "a", "start_line": 2.5}, "'start_line' must be integer, not number"),
        (
            "todo_write",
            {"todos": [{"content": "a", "status": "done"}]},
            "'todos[0].status' must be one of",
        ),
        (
            "edit_file",
            {"path": "a", "old_text": "", "new_text": "b"},
            "'old_text' must not be empty",
        ),
        ("bash", {"command": True}, "'command' must be string, not boolean"),
    ],
)
def test_refusal_words(name: str, arguments: dict[str, Any], words: str) -> None:
    tool = builtin_registry().get(name)
    assert tool is not None
    with pytest.raises(ArgumentsRefused) as refused:
        tool.definition.check_arguments(arguments)
    assert str(refused.value).startswith(words), str(refused.value)


def test_an_optional_field_sent_as_null_counts_as_not_sent() -> None:
    read = builtin_registry().get("read_file")
    assert read is not None
    assert read.definition.check_arguments({"path": "a", "start_line": None}) == {
        "path": "a",
        "start_line": None,
    }
    assert "start_line" not in read.definition.input_schema["required"]


def test_a_definition_has_a_model_or_a_schema_not_both() -> None:
    class Arguments(BaseModel):
        x: int

    with pytest.raises(ValueError, match="not both"):
        ToolDefinition(
            name="t",
            description="t",
            safety=Safety.READ_ONLY,
            arguments=Arguments,
            input_schema={"type": "object"},
        )


def test_a_given_schema_is_checked_as_given() -> None:
    """Tools defined elsewhere (MCP) keep their server's schema."""
    schema = {
        "type": "object",
        "properties": {"q": {"type": "string"}},
        "required": ["q"],
    }
    definition = ToolDefinition(
        name="mcp__db__query", description="", safety=Safety.READ_ONLY, input_schema=schema
    )
    assert definition.input_schema == schema
    assert definition.check_arguments({"q": "x", "other": 1}) == {"q": "x", "other": 1}
    with pytest.raises(ArgumentsRefused, match="missing required field 'q'"):
        definition.check_arguments({})


_DEFS = {"$defs": {"s": {"type": "string"}}}


@pytest.mark.parametrize(
    ("arguments", "schema", "words"),
    [
        (
            {"a": 1},
            {"properties": {"a": {"$ref": "#/$defs/s"}}, **_DEFS},
            "'a' must be string, not integer",
        ),
        (
            {"a": 1},
            {"properties": {"a": {"anyOf": [{"type": "string"}, {"type": "array"}]}}},
            "'a': 1 is not valid under any of the given schemas",
        ),
        (
            {"a": {"b": {}}},
            {"properties": {"a": {"required": ["b", "c"]}}},
            "missing required field 'a.c'",
        ),
        (
            {"a": {"z": 1}},
            {"properties": {"a": {"properties": {"c": {}}, "additionalProperties": False}}},
            "unknown field 'a.z' (known fields: c)",
        ),
        (
            {"a": [1, "x"]},
            {"properties": {"a": {"items": {"type": "integer"}}}},
            "'a[1]' must be integer, not string",
        ),
        (
            {"n": 0},
            {
                "$schema": "http://json-schema.org/draft-07/schema#",
                "properties": {"n": {"exclusiveMinimum": 0}},
            },
            "'n': 0 is less than or equal to the minimum of 0",
        ),
        ({"k": "b"}, {"properties": {"k": {"const": "a"}}}, "'k': 'a' was expected"),
    ],
)
def test_a_given_schema_is_checked_as_json_schema_naming_the_field(
    arguments: dict[str, Any], schema: dict[str, Any], words: str
) -> None:
    assert schema_error(arguments, schema) == words


def test_a_given_schema_cannot_reach_the_network_or_backtrack(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A server's schema is the server's: a remote `$ref` is not fetched, a broken schema is
    left to the server, and its regular expressions are not run by a backtracking engine."""
    import urllib.request

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("a schema check reached for the network")

    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    remote = {"properties": {"a": {"$ref": "http://127.0.0.1:9/s.json"}}}
    assert schema_error({"a": 1}, remote) is None
    assert schema_error({"a": 1}, {"type": "objectx"}) is None
    assert schema_error({"a": 1}, {"$ref": "#"}) is None
    hostile = "^(a+)+$"  # hours for `re` on the subject below
    subject = "a" * 40 + "!"
    by_value = {"properties": {"a": {"type": "string", "pattern": hostile}}}
    assert schema_error({"a": subject}, by_value) is None
    by_key = {"patternProperties": {hostile: {"type": "string"}}, "additionalProperties": False}
    assert schema_error({subject: 1}, by_key) is None
    assert schema_error({"a": 1}, {**by_value, "required": ["b"]}) == "missing required field 'b'"


def test_no_table_outside_the_definitions_names_a_tool() -> None:
    """The facts the gates read come from the definitions."""
    by_name = {d.name: d for d in OURS}
    assert {n for n, d in by_name.items() if d.role == "edit"} == {"write_file", "edit_file"}
    assert {n for n, d in by_name.items() if d.role == "agent"} == {
        "todo_write",
        "ask_user",
        "exit_plan_mode",
    }
    assert {n: d.primary_argument.name for n, d in by_name.items() if d.primary_argument} == {
        "bash": "command",
        "read_file": "path",
        "write_file": "path",
        "edit_file": "path",
        "list_dir": "path",
        "glob": "path",
        "grep": "path",
    }
    assert by_name["exit_plan_mode"].only_in is WorkMode.PLAN
    assert by_name["enter_plan_mode"].only_in is WorkMode.BUILD


# -- any arguments at all --------------------------------------------------------------------

_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.floats(-3, 3, allow_nan=False)
    | st.sampled_from(["", "a", "5", "true", "in_progress", "done"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["id", "text", "options", "content", "status", "zz"]), inner, max_size=4
        )
    ),
    max_leaves=12,
)


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


@given(data=st.data(), definition=st.sampled_from(OURS))
def test_any_arguments_are_taken_as_the_schema_says_or_refused_naming_a_field(
    data: st.DataObject, definition: ToolDefinition
) -> None:
    names = [*definition.input_schema.get("properties", {}), "zz"]
    arguments = data.draw(st.dictionaries(st.sampled_from(names), _JSON, max_size=len(names)))
    if data.draw(st.booleans()):
        arguments = {**_example(definition.input_schema), **arguments}
    try:
        taken = definition.check_arguments(arguments)
    except ArgumentsRefused as refused:
        message = str(refused)
        assert any(f"'{name}" in message for name in names), message
    else:
        # What the tool receives fits the schema the model was offered (a field sent as null
        # counts as not sent).
        assert schema_error(_without_nulls(taken), definition.input_schema) is None
