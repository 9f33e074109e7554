"""Configuration sources and trust: table and property tests of `plan_lsp.config`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plan_lsp.config import (
    MAX_WARNINGS,
    NEVER_FROM_WORKSPACE,
    WORKSPACE_CONFIG,
    Config,
    load_config,
    normalise_plans_dir,
    user_config_path,
)
from plan_lsp.policy.glob_match import MAX_WILDCARDS
from plan_lsp.protocol.state import PermissionMode, WorkMode

STRICTNESS = {"yolo": 0, "auto_edit": 1, "ask": 2, "strict": 3}


def _workspace(tmp: Path, text: str) -> Path:
    (tmp / ".plan-lsp").mkdir(parents=True, exist_ok=True)
    (tmp / ".plan-lsp" / "config.toml").write_text(text)
    return tmp


def _load(
    ws: Path | None, env: dict[str, str] | None = None, **kw: Any
) -> tuple[Config, list[str]]:
    environ = {"PLAN_LSP_CONFIG": "/nonexistent/plan-lsp.toml", **(env or {})}
    return load_config(ws, environ=environ, **kw)


@pytest.mark.parametrize(
    ("line", "field", "expected"),
    [
        ('mode = "build"', "mode", WorkMode.PLAN),
        ('permission_mode = "yolo"', "permission_mode", PermissionMode.ASK),
        ('permission_mode = "auto_edit"', "permission_mode", PermissionMode.ASK),
        ('plan_shell = "classified"', "plan_shell", None),
        ('plan_shell = "sandboxed"', "plan_shell", None),
        ("plan_network = true", "plan_network", False),
        ("allow_enter_plan_in_yolo = true", "allow_enter_plan_in_yolo", False),
        ('provider = "anthropic"', "provider", "openai"),
        ('base_url = "http://evil.example/v1"', "base_url", None),
        ('api_key = "sk-x"', "api_key", None),
        ('script = "s.json"', "script", None),
        ('transcript = "src/t.jsonl"', "transcript", None),
        # Tool output in the user's turns: only the user may choose that.
        ('chat_roles = "user_assistant"', "chat_roles", "auto"),
    ],
)
def test_workspace_cannot_lower_protection(
    tmp_path: Path, line: str, field: str, expected: Any
) -> None:
    config, warnings = _load(_workspace(tmp_path, line + "\n"))
    assert getattr(config, field) == expected
    assert any(field in w and "may only tighten" in w for w in warnings), warnings


@pytest.mark.parametrize(
    ("line", "field", "expected"),
    [
        ('permission_mode = "strict"', "permission_mode", PermissionMode.STRICT),
        ('plan_shell = "off"', "plan_shell", "off"),
        ('mode = "plan"', "mode", WorkMode.PLAN),
        ("max_steps = 9", "max_steps", 9),
        ('plans_dir = ".plan-lsp/drafts"', "plans_dir", ".plan-lsp/drafts"),
        ('chat_roles = "native"', "chat_roles", "native"),
    ],
)
def test_workspace_may_tighten_and_set_harmless_keys(
    tmp_path: Path, line: str, field: str, expected: Any
) -> None:
    config, warnings = _load(_workspace(tmp_path, line + "\n"))
    assert getattr(config, field) == expected
    assert warnings == []


def test_workspace_permission_rules_merge_without_allow(tmp_path: Path) -> None:
    ws = _workspace(
        tmp_path,
        '[permissions]\nallow = ["bash(*)"]\nask = ["bash(git *)"]\ndeny = ["bash(rm *)"]\n',
    )
    config, warnings = _load(ws, init_options={"permissions": {"allow": ["bash(ls *)"]}})
    assert config.permissions.allow == ["bash(ls *)"]
    assert config.permissions.ask == ["bash(git *)"]
    assert config.permissions.deny == ["bash(rm *)"]
    assert any("permissions.allow" in w for w in warnings)


def test_trusted_precedence_and_camel_case(tmp_path: Path) -> None:
    user = tmp_path / "user.toml"
    user.write_text('model = "from-user"\nmax_steps = 5\nbase_url = "http://127.0.0.1:1/v1"\n')
    config, warnings = load_config(
        None,
        init_options={"maxSteps": 6, "runTimeoutS": 9, "planNetwork": True},
        cli={"max_steps": 7},
        environ={
            "PLAN_LSP_CONFIG": str(user),
            "PLAN_LSP_MODEL": "from-env",
            "PLAN_LSP_MAX_TOKENS": "12",
        },
    )
    assert warnings == []
    assert config.model == "from-user" and config.max_steps == 7 and config.run_timeout_s == 9
    assert config.max_tokens == 12 and config.plan_network is True
    assert config.base_url == "http://127.0.0.1:1/v1"


def test_bad_values_fall_back_per_field(tmp_path: Path) -> None:
    config, warnings = _load(
        None,
        init_options={"maxSteps": 0, "model": "m", "planShell": "never", "nope": 1},
        env={"PLAN_LSP_PERMISSIONS": "{not json"},
    )
    assert config.max_steps == 50 and config.model == "m" and config.plan_shell is None
    joined = "\n".join(warnings)
    assert "max_steps" in joined and "plan_shell" in joined and "nope" in joined
    assert "permissions" in joined


def test_unreadable_files_are_reported(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws", "this is = not toml [")
    user = tmp_path / "user.toml"
    user.write_text("[[[")
    _config, warnings = load_config(ws, environ={"PLAN_LSP_CONFIG": str(user)})
    assert any("user config" in w for w in warnings)
    assert any("config.toml" in w and "could not be read" in w for w in warnings)


@pytest.mark.parametrize(
    "value",
    [".", "..", "/abs/plans", "~/plans", "plans", ".plan-lsp", ".plan-lsp/../src",
     ".plan-lsp/revisions", ".plan-lsp/state.db", "a\\b", ".plan-lsp/x/../../src"],
)  # fmt: skip
def test_plans_dir_stays_below_the_server_directory(value: str) -> None:
    with pytest.raises(ValueError):
        normalise_plans_dir(value)


def test_plans_dir_normalised() -> None:
    assert normalise_plans_dir("./.plan-lsp/./plans/") == ".plan-lsp/plans"


def test_user_config_path_resolution(tmp_path: Path) -> None:
    assert user_config_path({"PLAN_LSP_CONFIG": "/x/c.toml"}) == Path("/x/c.toml")
    assert user_config_path({"XDG_CONFIG_HOME": "/cfg"}) == Path("/cfg/plan-lsp/config.toml")
    assert user_config_path({}).name == "config.toml"


# -- properties -----------------------------------------------------------------------------

_MODES = st.sampled_from(["plan", "build"])
_PERMS = st.sampled_from(list(STRICTNESS))
_SHELLS = st.sampled_from(["off", "classified", "sandboxed"])
_RULES = st.lists(st.sampled_from(["bash(ls *)", "write_file(*)", "bash(rm *)"]), max_size=3)


def _layer() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {},
        optional={
            "mode": _MODES,
            "permission_mode": _PERMS,
            "plan_shell": _SHELLS,
            "plan_network": st.booleans(),
            "allow_enter_plan_in_yolo": st.booleans(),
            "chat_roles": st.sampled_from(["auto", "native", "user_assistant"]),
            "provider": st.sampled_from(["openai", "anthropic"]),
            "base_url": st.sampled_from(["http://a.example/v1", "http://b.example/v1"]),
            "transcript": st.sampled_from(["t1.jsonl", "t2.jsonl"]),
            "permissions": st.fixed_dictionaries({"allow": _RULES, "ask": _RULES, "deny": _RULES}),
        },
    )


def _toml(values: dict[str, Any]) -> str:
    lines = []
    for key, value in values.items():
        if key == "permissions":
            continue
        lines.append(f"{key} = {str(value).lower() if isinstance(value, bool) else repr(value)}")
    if "permissions" in values:
        lines.append("[permissions]")
        for verdict, rules in values["permissions"].items():
            lines.append(f"{verdict} = [{', '.join(repr(r) for r in rules)}]")
    return "\n".join(lines).replace("'", '"') + "\n"


@given(trusted=_layer(), hostile=_layer())
def test_a_workspace_only_ever_tightens(
    tmp_path_factory: pytest.TempPathFactory, trusted: dict[str, Any], hostile: dict[str, Any]
) -> None:
    ws = _workspace(tmp_path_factory.mktemp("ws"), _toml(hostile))
    without = load_config(None, init_options=trusted, environ={"PLAN_LSP_CONFIG": "/nonexistent"})[
        0
    ]
    with_ws = load_config(ws, init_options=trusted, environ={"PLAN_LSP_CONFIG": "/nonexistent"})[0]
    for key in NEVER_FROM_WORKSPACE - {"mcp"}:
        assert getattr(with_ws, key) == getattr(without, key), key
    assert not (without.mode is WorkMode.PLAN and with_ws.mode is WorkMode.BUILD)
    assert STRICTNESS[with_ws.permission_mode.value] >= STRICTNESS[without.permission_mode.value]
    assert with_ws.plan_shell in (without.plan_shell, "off")
    assert with_ws.plan_network <= without.plan_network
    assert with_ws.allow_enter_plan_in_yolo <= without.allow_enter_plan_in_yolo
    roles = {"user_assistant": 0, "auto": 1, "native": 2}
    assert roles[with_ws.chat_roles] >= roles[without.chat_roles]
    assert with_ws.permissions.allow == without.permissions.allow
    assert set(without.permissions.deny) <= set(with_ws.permissions.deny)


# -- reading the files: regular files only, bounded, never blocking ---------------------------


@pytest.mark.parametrize(
    ("setup", "said"),
    [
        ("stdin-link", ".plan-lsp/config.toml is a symbolic link"),
        ("file-link", ".plan-lsp/config.toml is a symbolic link"),
        ("dir-link", ".plan-lsp is a symbolic link"),
        ("fifo", ".plan-lsp/config.toml is a FIFO, not a regular file"),
        ("folder", ".plan-lsp/config.toml is a folder, not a regular file"),
        ("huge", "more than the 1048576 bytes read at most"),
    ],
)
def test_a_workspace_config_that_is_not_a_small_regular_file_is_refused_unread(
    tmp_path: Path, setup: str, said: str
) -> None:
    """Whatever the repository puts at `.plan-lsp/config.toml` (git stores links), only a
    regular file reached without a link is read: never the server's own input, never a
    file elsewhere, never a FIFO that would block it."""
    ws = tmp_path / "ws"
    server_dir = ws / ".plan-lsp"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "config.toml").write_text("max_steps = 7\n")
    ws.mkdir()
    if setup == "dir-link":
        server_dir.symlink_to(elsewhere)
    else:
        server_dir.mkdir()
    config = server_dir / "config.toml"
    if setup == "stdin-link":
        config.symlink_to("/dev/stdin")
    elif setup == "file-link":
        config.symlink_to(elsewhere / "config.toml")
    elif setup == "fifo":
        os.mkfifo(config)
    elif setup == "folder":
        config.mkdir()
    elif setup == "huge":
        config.write_text("max_steps = 7\n" + "#" * (1024 * 1024))
    loaded, warnings = _load(ws)
    assert loaded.max_steps == 50
    assert any(said in w and "its settings were ignored" in w for w in warnings), warnings


@pytest.mark.parametrize("setup", ["plain", "link", "devnull", "fifo", "huge"])
def test_the_user_config_follows_a_link_but_reads_only_a_regular_file(
    tmp_path: Path, setup: str
) -> None:
    real = tmp_path / "dotfiles" / "plan-lsp.toml"
    real.parent.mkdir()
    real.write_text("max_steps = 7\n")
    user = {"plain": real, "link": tmp_path / "config.toml", "devnull": Path(os.devnull)}.get(
        setup, tmp_path / "config.toml"
    )
    if setup == "link":
        user.symlink_to(real)
    elif setup == "fifo":
        os.mkfifo(user)
    elif setup == "huge":
        user.write_text("max_steps = 7\n" + "#" * (1024 * 1024))
    loaded, warnings = load_config(None, environ={"PLAN_LSP_CONFIG": str(user)})
    if setup in ("plain", "link"):
        assert loaded.max_steps == 7 and warnings == []
    elif setup == "devnull":
        assert loaded.max_steps == 50 and warnings == []
    else:
        assert loaded.max_steps == 50
        assert any("user config" in w and "could not be read" in w for w in warnings)


# -- nothing a config file holds fails the load -------------------------------------------------

NESTED = "a = " + "[" * 100_000 + "]" * 100_000 + "\n"


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (NESTED.encode(), "nested too deeply"),
        (b"x = " + b"{ y = " * 5000 + b"1" + b" }" * 5000, "nested too deeply"),
        (b"max_steps = 7\n\xff\xfe", "utf-8"),
        (b"max_steps = [[[", "could not be read"),
    ],
)
def test_a_config_file_that_cannot_be_parsed_is_reported_and_ignored(
    tmp_path: Path, content: bytes, said: str
) -> None:
    ws = tmp_path / "ws"
    (ws / ".plan-lsp").mkdir(parents=True)
    (ws / ".plan-lsp" / "config.toml").write_bytes(content)
    user = tmp_path / "user.toml"
    user.write_bytes(content)
    good_user = tmp_path / "good.toml"
    good_user.write_text("max_steps = 9\n")
    # the workspace file broken, the user's file good: the user's settings hold
    config, warnings = load_config(ws, environ={"PLAN_LSP_CONFIG": str(good_user)})
    assert config.max_steps == 9
    assert any(str(WORKSPACE_CONFIG) in w and said in w for w in warnings), warnings
    # the user's file broken too: defaults, both reported
    config, warnings = load_config(ws, environ={"PLAN_LSP_CONFIG": str(user)})
    assert config.max_steps == 50
    assert any("user config" in w and said in w for w in warnings), warnings


def test_a_structured_environment_value_nested_too_deeply_is_reported() -> None:
    config, warnings = _load(None, env={"PLAN_LSP_PERMISSIONS": "[" * 100_000})
    assert config.permissions.deny == []
    assert any("permissions" in w and "nested too deeply" in w for w in warnings), warnings


def test_rules_over_the_pattern_limits_are_ignored_one_by_one_with_a_named_warning(
    tmp_path: Path,
) -> None:
    many = "bash(" + "**/" * (MAX_WILDCARDS + 1) + "x)"
    ws = _workspace(
        tmp_path / "ws",
        "[permissions]\n"
        f'deny = ["read_file(secrets/**)", "{many}", "write_file({"a" * 5000})", 5, '
        '"bash([z-a])", "bash(' + "**/" * 20 + 'x)"]\n'
        'ask = "bash"\n',
    )
    config, warnings = _load(ws)
    assert config.permissions.deny == ["read_file(secrets/**)", "bash(" + "**/" * 20 + "x)"]
    joined = "\n".join(warnings)
    assert "too_many_wildcards" in joined and "pattern_too_long" in joined
    assert "runs backwards" in joined and "not a string" in joined
    assert "permissions.ask" in joined
    assert all(len(w) < 1000 for w in warnings)


def test_a_thousand_problems_are_a_few_warnings(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws", "\n".join(f"unknown_{i} = 1" for i in range(1000)))
    _config, warnings = _load(ws)
    assert len(warnings) <= MAX_WARNINGS
    assert warnings[-1].startswith("... and ") and "more configuration problems" in warnings[-1]


@given(st.binary(max_size=300) | st.text(st.sampled_from(list('[]{}=".,\n abmx1')), max_size=300))
def test_no_workspace_file_makes_the_load_fail(data: bytes | str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        (ws / ".plan-lsp").mkdir()
        raw = data.encode() if isinstance(data, str) else data
        (ws / ".plan-lsp" / "config.toml").write_bytes(raw)
        config, _warnings = _load(ws)
        assert config.provider == "openai"  # a workspace never sets it


def test_a_source_holds_at_most_a_hundred_rules(tmp_path: Path) -> None:
    rules = ", ".join(f'"bash(tool{i} *)"' for i in range(150))
    ws = _workspace(tmp_path / "ws", f'[permissions]\nask = ["read_file"]\ndeny = [{rules}]\n')
    config, warnings = _load(ws)
    assert config.permissions.ask == ["read_file"]
    assert config.permissions.deny == [f"bash(tool{i} *)" for i in range(99)]
    assert [w for w in warnings if "too_many_rules" in w] == [
        f"{WORKSPACE_CONFIG}: 151 permission rules, more than the limit of 100 "
        "(too_many_rules); the last 51 were ignored"
    ]
