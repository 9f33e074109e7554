"""Permission engine: rule syntax, matching, scopes, permission-mode table, always answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from plan_lsp.policy.glob_match import compile_glob
from plan_lsp.policy.permissions import (
    MODE_DEFAULTS,
    PermissionEngine,
    Rule,
    RuleScope,
)
from plan_lsp.policy.safety import Safety, ToolDefinition
from plan_lsp.protocol.state import PermissionMode, WorkMode
from tests.tool_facts import builtin_facts


def _tool(name: str, safety: Safety = Safety.SIDE_EFFECT, per_call: bool = False) -> ToolDefinition:
    return ToolDefinition(
        name=name,
        description=name,
        input_schema={"type": "object"},
        safety=safety,
        classified_per_call=per_call,
        **builtin_facts(name),
    )


BASH = _tool("bash", per_call=True)
WRITE = _tool("write_file")
EDIT = _tool("edit_file")
READ = _tool("read_file", Safety.READ_ONLY)
TODO = _tool("todo_write", Safety.READ_ONLY)
MCP = _tool("mcp__db__query")
ENTER = _tool("enter_plan_mode", Safety.CONTROL)
EXIT = _tool("exit_plan_mode", Safety.CONTROL)
PLAN_WRITE = _tool("plan_write", Safety.PLAN_FILE)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "secrets").mkdir()
    return root


def _decide(
    engine: PermissionEngine,
    tool: ToolDefinition,
    args: dict[str, object],
    pmode: PermissionMode = PermissionMode.ASK,
    wmode: WorkMode = WorkMode.BUILD,
    proven: bool = False,
) -> str:
    return engine.decide(
        tool, args, permission_mode=pmode, work_mode=wmode, read_only_proven=proven
    ).verdict


@pytest.mark.parametrize(
    ("text", "tool", "pattern"),
    [
        ("read_file", "read_file", None),
        ("  bash(git log *)  ", "bash", "git log *"),
        ("write_file(src/**)", "write_file", "src/**"),
        ("mcp__db__*", "mcp__db__*", None),
        ("bash(echo (a))", "bash", "echo (a)"),
    ],
)
def test_rule_parse(text: str, tool: str, pattern: str | None) -> None:
    rule = Rule.parse(text)
    assert (rule.tool, rule.pattern) == (tool, pattern)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "expected a tool name"),
        ("bash(", "expected a tool name"),
        ("bash()", "pattern in parentheses is empty"),
        ("bash git log", "expected a tool name"),
        ("(src/**)", "expected a tool name"),
    ],
)
def test_bad_rules_raise_clear_value_error(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Rule.parse(text)
    with pytest.raises(ValueError, match="bad permission rule"):
        PermissionEngine(allow=["read_file", text])


def test_rule_lists_must_be_lists() -> None:
    with pytest.raises(ValueError, match="list of strings"):
        PermissionEngine(allow="read_file")


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("src/**", "src/a.py", True),
        ("src/**", "src/deep/er/a.py", True),
        ("src/**", "srcx/a.py", False),
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "src/x/a.py", False),
        ("**/*.py", "a.py", True),
        ("**/*.py", "x/y/a.py", True),
        ("*.md", "docs/a.md", False),
        ("a?.txt", "ab.txt", True),
        ("a?.txt", "a/.txt", False),
        ("[ab].txt", "b.txt", True),
        ("[!ab].txt", "b.txt", False),
        ("[ab.txt", "[ab.txt", True),
    ],
)
def test_path_glob(pattern: str, path: str, matches: bool) -> None:
    assert compile_glob(pattern, path_mode=True).match(path) is matches


@pytest.mark.parametrize(
    ("pattern", "command", "matches"),
    [
        ("git log *", "git log --oneline -3", True),
        ("git log *", "git log", True),
        ("git log *", "git logx", False),
        ("git log *", "git status", False),
        ("npm run *", "npm run test/unit", True),
        ("ls", "ls -la", False),
    ],
)
def test_command_glob(pattern: str, command: str, matches: bool) -> None:
    assert compile_glob(pattern, path_mode=False).match(command) is matches


@pytest.mark.parametrize(
    ("pmode", "tool", "args", "proven", "expected"),
    [
        (PermissionMode.ASK, READ, {"path": "a"}, False, "allow"),
        (PermissionMode.ASK, WRITE, {"path": "src/a.py"}, False, "ask"),
        (PermissionMode.ASK, BASH, {"command": "rm x"}, False, "ask"),
        (PermissionMode.ASK, BASH, {"command": "ls"}, True, "allow"),
        (PermissionMode.ASK, ENTER, {}, False, "ask"),
        (PermissionMode.ASK, EXIT, {}, False, "allow"),
        (PermissionMode.ASK, TODO, {"todos": []}, False, "allow"),
        (PermissionMode.AUTO_EDIT, WRITE, {"path": "src/a.py"}, False, "allow"),
        (PermissionMode.AUTO_EDIT, EDIT, {"path": "src/a.py"}, False, "allow"),
        (PermissionMode.AUTO_EDIT, WRITE, {"path": "../outside.py"}, False, "ask"),
        (PermissionMode.AUTO_EDIT, WRITE, {"path": "/etc/passwd"}, False, "ask"),
        (PermissionMode.AUTO_EDIT, BASH, {"command": "make"}, False, "ask"),
        (PermissionMode.AUTO_EDIT, MCP, {}, False, "ask"),
        (PermissionMode.AUTO_EDIT, BASH, {"command": "ls"}, True, "allow"),
        (PermissionMode.YOLO, BASH, {"command": "rm -rf x"}, False, "allow"),
        (PermissionMode.YOLO, MCP, {}, False, "allow"),
        (PermissionMode.STRICT, READ, {"path": "a"}, False, "ask"),
        (PermissionMode.STRICT, BASH, {"command": "ls"}, True, "ask"),
        (PermissionMode.STRICT, WRITE, {"path": "src/a.py"}, False, "ask"),
        (PermissionMode.STRICT, TODO, {"todos": []}, False, "allow"),
        (PermissionMode.STRICT, PLAN_WRITE, {"content": "x"}, False, "allow"),
    ],
)
def test_permission_mode_defaults(
    ws: Path,
    pmode: PermissionMode,
    tool: ToolDefinition,
    args: dict[str, object],
    proven: bool,
    expected: str,
) -> None:
    engine = PermissionEngine(workspace_roots=[ws])
    assert _decide(engine, tool, args, pmode, proven=proven) == expected


def test_every_permission_mode_has_a_complete_row() -> None:
    for pmode in PermissionMode:
        assert set(MODE_DEFAULTS[pmode]) == {"read", "agent", "edit", "side_effect"}


def test_symlink_into_outside_is_not_an_auto_edit(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "link").symlink_to(outside)
    engine = PermissionEngine(workspace_roots=[ws])
    assert _decide(engine, WRITE, {"path": "link/x"}, PermissionMode.AUTO_EDIT) == "ask"


@pytest.mark.parametrize(
    ("rules", "tool", "args", "pmode", "expected"),
    [
        (
            {"allow": ["bash(git log *)"]},
            BASH,
            {"command": "git log -3"},
            PermissionMode.ASK,
            "allow",
        ),
        ({"allow": ["bash(git log *)"]}, BASH, {"command": "git push"}, PermissionMode.ASK, "ask"),
        # An allow rule never matches a compound command.
        (
            {"allow": ["bash(git log *)"]},
            BASH,
            {"command": "git log; rm -rf ~"},
            PermissionMode.ASK,
            "ask",
        ),
        (
            {"allow": ["bash(git log *)"]},
            BASH,
            {"command": "git log $(rm -rf ~)"},
            PermissionMode.ASK,
            "ask",
        ),
        ({"allow": ["bash(*)"]}, BASH, {"command": "ls | sh"}, PermissionMode.ASK, "ask"),
        # ... but a deny rule does.
        ({"deny": ["bash(*rm *)"]}, BASH, {"command": "ls; rm -rf x"}, PermissionMode.YOLO, "deny"),
        (
            {"allow": ["write_file(src/**)"]},
            WRITE,
            {"path": "src/a/b.py"},
            PermissionMode.ASK,
            "allow",
        ),
        (
            {"allow": ["write_file(src/**)"]},
            WRITE,
            {"path": "./src/a.py"},
            PermissionMode.ASK,
            "allow",
        ),
        ({"allow": ["write_file(src/**)"]}, WRITE, {"path": "lib/a.py"}, PermissionMode.ASK, "ask"),
        (
            {"allow": ["write_file(src/**)"]},
            WRITE,
            {"path": "src/../secrets/k"},
            PermissionMode.ASK,
            "ask",
        ),
        (
            {"deny": ["write_file(secrets/**)"]},
            WRITE,
            {"path": "src/../secrets/k"},
            PermissionMode.YOLO,
            "deny",
        ),
        ({"deny": ["read_file"]}, READ, {"path": "x"}, PermissionMode.YOLO, "deny"),
        (
            {"allow": ["read_file"], "deny": ["read_file(secrets/**)"]},
            READ,
            {"path": "secrets/a"},
            PermissionMode.STRICT,
            "deny",
        ),
        ({"allow": ["read_file"]}, READ, {"path": "src/a"}, PermissionMode.STRICT, "allow"),
        ({"ask": ["write_file"]}, WRITE, {"path": "src/a"}, PermissionMode.AUTO_EDIT, "ask"),
        ({"ask": ["write_file"]}, WRITE, {"path": "src/a"}, PermissionMode.YOLO, "allow"),
        (
            {"ask": ["bash"], "allow": ["bash(ls)"]},
            BASH,
            {"command": "ls"},
            PermissionMode.ASK,
            "ask",
        ),
        ({"allow": ["mcp__db__*"]}, MCP, {}, PermissionMode.ASK, "allow"),
        ({"allow": ["mcp__db__*(x)"]}, MCP, {}, PermissionMode.ASK, "ask"),
    ],
)
def test_rules(
    ws: Path,
    rules: dict[str, list[str]],
    tool: ToolDefinition,
    args: dict[str, object],
    pmode: PermissionMode,
    expected: str,
) -> None:
    engine = PermissionEngine(
        rules.get("allow", []), rules.get("ask", []), rules.get("deny", []), workspace_roots=[ws]
    )
    assert _decide(engine, tool, args, pmode) == expected


def test_absolute_path_inside_workspace_matches_relative_rule(ws: Path) -> None:
    engine = PermissionEngine(allow=["write_file(src/**)"], workspace_roots=[ws])
    assert _decide(engine, WRITE, {"path": str(ws / "src" / "a.py")}) == "allow"


def test_symlink_alias_is_denied_and_not_allowed(ws: Path) -> None:
    (ws / "alias").symlink_to(ws / "secrets")
    engine = PermissionEngine(
        allow=["write_file(alias/**)"], deny=["write_file(secrets/**)"], workspace_roots=[ws]
    )
    assert _decide(engine, WRITE, {"path": "alias/k"}, PermissionMode.YOLO) == "deny"
    allow_only = PermissionEngine(allow=["write_file(alias/**)"], workspace_roots=[ws])
    # Resolved, the path is secrets/k, which the allow rule does not name: ask.
    assert _decide(allow_only, WRITE, {"path": "alias/k"}) == "ask"


def test_deny_in_any_scope_beats_allow_in_a_nearer_scope(ws: Path) -> None:
    engine = PermissionEngine(allow=["bash(make *)"], workspace_roots=[ws])
    engine.add_rules(RuleScope.USER, deny=["bash(make deploy*)"])
    engine.add_rules(RuleScope.SESSION, allow=["bash(make deploy)"])
    assert _decide(engine, BASH, {"command": "make deploy"}) == "deny"
    assert _decide(engine, BASH, {"command": "make test"}) == "allow"


def test_nearer_scope_decides_between_allow_and_ask(ws: Path) -> None:
    engine = PermissionEngine(ask=["bash(make *)"], workspace_roots=[ws])
    engine.add_rules(RuleScope.USER, allow=["bash(make *)"])
    assert _decide(engine, BASH, {"command": "make"}) == "ask"
    engine.add_rules(RuleScope.SESSION, allow=["bash(make)"])
    assert _decide(engine, BASH, {"command": "make"}) == "allow"


def test_allow_always_is_scoped_by_work_mode(ws: Path) -> None:
    engine = PermissionEngine(workspace_roots=[ws])
    added = engine.remember("allow_always", READ, {"path": "src/a.py"}, WorkMode.BUILD)
    assert added == "read_file(src/a.py)"
    assert _decide(engine, READ, {"path": "src/a.py"}, PermissionMode.STRICT) == "allow"
    assert (
        _decide(engine, READ, {"path": "src/a.py"}, PermissionMode.STRICT, WorkMode.PLAN) == "ask"
    )
    assert _decide(engine, READ, {"path": "src/b.py"}, PermissionMode.STRICT) == "ask"


def test_allow_always_matches_exactly_even_with_glob_characters(ws: Path) -> None:
    engine = PermissionEngine(workspace_roots=[ws])
    engine.remember("allow_always", BASH, {"command": "ls *.py"}, WorkMode.BUILD)
    assert _decide(engine, BASH, {"command": "ls *.py"}) == "allow"
    assert _decide(engine, BASH, {"command": "ls a.py"}) == "ask"


def test_reject_always_holds_in_every_mode(ws: Path) -> None:
    engine = PermissionEngine(workspace_roots=[ws])
    engine.remember("reject_always", BASH, {"command": "make"}, WorkMode.BUILD)
    for wmode in WorkMode:
        assert _decide(engine, BASH, {"command": "make"}, PermissionMode.YOLO, wmode) == "deny"


def test_once_answers_add_no_rule(ws: Path) -> None:
    engine = PermissionEngine(workspace_roots=[ws])
    assert engine.remember("allow_once", BASH, {"command": "make"}, WorkMode.BUILD) is None
    assert engine.remember("reject_once", BASH, {"command": "make"}, WorkMode.BUILD) is None
    assert engine.rules() == []


def test_decision_names_the_rule(ws: Path) -> None:
    engine = PermissionEngine(deny=["write_file(secrets/**)"], workspace_roots=[ws])
    decision = engine.decide(
        WRITE,
        {"path": "secrets/a"},
        permission_mode=PermissionMode.YOLO,
        work_mode=WorkMode.BUILD,
    )
    assert decision.rule == "write_file(secrets/**)"
    assert decision.scope is RuleScope.PROJECT
    assert "secrets/**" in decision.reason


def test_rules_over_the_pattern_limits_are_refused_with_their_name() -> None:
    with pytest.raises(ValueError, match="too_many_wildcards"):
        Rule.parse("bash(" + "*a" * 40 + ")")
    with pytest.raises(ValueError, match="pattern_too_long"):
        Rule.parse("write_file(" + "a" * 5000 + ")")
    with pytest.raises(ValueError, match="runs backwards"):
        Rule.parse("read_file([z-a])")


def test_a_pathological_deny_rule_is_decided_in_one_pass(ws: Path) -> None:
    # `(?:.*/)?` twenty-six times: hours per call for the old regular expressions.
    pattern = "**/" * 26 + "x"
    engine = PermissionEngine(
        deny=[f"bash({pattern})", f"read_file({pattern})"], workspace_roots=[ws]
    )
    command = "cat " + "a/" * 20_000 + "b"
    assert _decide(engine, BASH, {"command": command}, PermissionMode.YOLO) == "allow"
    assert _decide(engine, BASH, {"command": command + "/x"}, PermissionMode.YOLO) == "deny"
    assert _decide(engine, READ, {"path": "a/" * 100 + "b"}) == "allow"
    assert _decide(engine, READ, {"path": "a/" * 100 + "x"}) == "deny"


def test_an_always_answer_too_long_to_be_a_rule_holds_once(ws: Path) -> None:
    engine = PermissionEngine(workspace_roots=[ws])
    command = "echo " + "x" * 10_000
    assert engine.remember("allow_always", BASH, {"command": command}, WorkMode.BUILD) is None
    assert engine.rules() == []
    short = engine.remember("allow_always", BASH, {"command": "ls *"}, WorkMode.BUILD)
    assert short == "bash(ls [*])"


def test_an_argument_too_long_to_match_meets_deny_and_ask_rules_but_no_allow(ws: Path) -> None:
    from plan_lsp.policy.permissions import MAX_MATCHED_CHARS

    long = "echo " + "x" * MAX_MATCHED_CHARS
    engine = PermissionEngine(allow=["bash(echo *)"], workspace_roots=[ws])
    assert _decide(engine, BASH, {"command": "echo hi"}) == "allow"
    assert _decide(engine, BASH, {"command": long}) == "ask"  # the mode's default
    engine = PermissionEngine(deny=["bash(rm *)"], workspace_roots=[ws])
    decision = engine.decide(
        BASH, {"command": long}, permission_mode=PermissionMode.YOLO, work_mode=WorkMode.BUILD
    )
    assert decision.verdict == "deny" and "deny and ask rules apply" in decision.reason
    engine = PermissionEngine(deny=["read_file(secrets/**)"], workspace_roots=[ws])
    assert _decide(engine, READ, {"path": "a/" * MAX_MATCHED_CHARS}) == "deny"
    # a rule without a pattern is no different
    assert _decide(PermissionEngine(deny=["bash"]), BASH, {"command": long}) == "deny"


def test_many_rules_are_matched_in_one_pass_with_the_same_answers(ws: Path) -> None:
    deny = [f"bash(*tool{i} --force*)" for i in range(60)]
    engine = PermissionEngine(deny=deny, ask=["bash(*--dry*)"], workspace_roots=[ws])
    for i in (0, 31, 59):
        command = f"echo {'y' * 5000}; tool{i} --force"
        decision = engine.decide(
            BASH, {"command": command}, permission_mode=PermissionMode.ASK, work_mode=WorkMode.BUILD
        )
        assert decision.rule == f"bash(*tool{i} --force*)"
    assert _decide(engine, BASH, {"command": "tool7 --dry"}) == "ask"
    assert _decide(engine, BASH, {"command": "tool7", "x": 1}, PermissionMode.YOLO) == "allow"
