"""Definition gate: what the model is shown, per work mode, planShell and allow-list."""

from __future__ import annotations

import pytest

from plan_lsp.agent.plan_tools import ENTER_PLAN_MODE, EXIT_PLAN_MODE
from plan_lsp.policy.definitions import MODE_RULES, definitions_for, mode_refusal
from plan_lsp.policy.safety import Safety, ToolDefinition
from plan_lsp.protocol.state import WorkMode
from plan_lsp.tools.registry import builtin_registry


def _tool(
    name: str, safety: Safety, *, system: bool = False, per_call: bool = False
) -> ToolDefinition:
    return ToolDefinition(
        name=name,
        description=name,
        input_schema={"type": "object"},
        safety=safety,
        system=system,
        classified_per_call=per_call,
    )


ALL = [
    _tool("read_file", Safety.READ_ONLY),
    _tool("grep", Safety.READ_ONLY),
    _tool("todo_write", Safety.READ_ONLY, system=True),
    _tool("write_file", Safety.SIDE_EFFECT),
    _tool("edit_file", Safety.SIDE_EFFECT),
    _tool("bash", Safety.SIDE_EFFECT, per_call=True),
    _tool("task", Safety.SUBAGENT),
    # The plan tools' own definitions: each says which mode it belongs to.
    ENTER_PLAN_MODE,
    EXIT_PLAN_MODE,
    _tool("plan_write", Safety.PLAN_FILE),
    _tool("mcp__x__write", Safety.SIDE_EFFECT),
    _tool("mcp__x__read", Safety.READ_ONLY),
    _tool("deploy", Safety.SIDE_EFFECT, system=True),
]


def _names(mode: WorkMode, plan_shell: str, allow: frozenset[str] | None = None) -> set[str]:
    return {d.name for d in definitions_for(ALL, mode, allow, plan_shell)}


@pytest.mark.parametrize(
    ("mode", "plan_shell", "expected"),
    [
        (
            WorkMode.PLAN,
            "sandboxed",
            {
                "read_file",
                "grep",
                "todo_write",
                "bash",
                "task",
                "exit_plan_mode",
                "plan_write",
                "mcp__x__read",
            },
        ),
        (
            WorkMode.PLAN,
            "classified",
            {
                "read_file",
                "grep",
                "todo_write",
                "bash",
                "task",
                "exit_plan_mode",
                "plan_write",
                "mcp__x__read",
            },
        ),
        (
            WorkMode.PLAN,
            "off",
            {
                "read_file",
                "grep",
                "todo_write",
                "task",
                "exit_plan_mode",
                "plan_write",
                "mcp__x__read",
            },
        ),
        (
            WorkMode.BUILD,
            "off",
            {
                "read_file",
                "grep",
                "todo_write",
                "write_file",
                "edit_file",
                "bash",
                "task",
                "enter_plan_mode",
                "mcp__x__write",
                "mcp__x__read",
                "deploy",
            },
        ),
    ],
)
def test_mode_table(mode: WorkMode, plan_shell: str, expected: set[str]) -> None:
    assert _names(mode, plan_shell) == expected


def test_plan_mode_never_shows_a_side_effect_tool() -> None:
    for plan_shell in ("off", "classified", "sandboxed"):
        shown = definitions_for(ALL, WorkMode.PLAN, None, plan_shell)
        assert all(d.safety is not Safety.SIDE_EFFECT or d.classified_per_call for d in shown)
        assert "enter_plan_mode" not in {d.name for d in shown}


def test_build_mode_never_shows_plan_file_tools() -> None:
    shown = definitions_for(ALL, WorkMode.BUILD, None, "sandboxed")
    assert all(d.safety is not Safety.PLAN_FILE for d in shown)
    assert "exit_plan_mode" not in {d.name for d in shown}


def test_allow_list_filters_and_system_tools_pass_it() -> None:
    allow = frozenset({"read_file", "write_file"})
    assert _names(WorkMode.BUILD, "off", allow) == {
        "read_file",
        "write_file",
        "todo_write",
        "deploy",
    }


def test_system_tools_never_pass_the_safety_filter() -> None:
    allow = frozenset({"read_file"})
    assert _names(WorkMode.PLAN, "sandboxed", allow) == {"read_file", "todo_write"}
    assert mode_refusal(ALL[-1], WorkMode.PLAN, "sandboxed") is not None


def test_empty_allow_list_leaves_only_system_tools() -> None:
    assert _names(WorkMode.BUILD, "off", frozenset()) == {"todo_write", "deploy"}


def test_rules_cover_every_mode() -> None:
    assert set(MODE_RULES) == set(WorkMode)


def test_builtin_registry_definitions_in_plan_mode() -> None:
    names = {
        d.name
        for d in definitions_for(builtin_registry().definitions(), WorkMode.PLAN, None, "off")
    }
    assert names == {"read_file", "list_dir", "glob", "grep", "todo_write", "ask_user"}
