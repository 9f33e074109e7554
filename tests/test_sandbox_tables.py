"""The sandbox's tables (`policy/sandbox/layout.toml`, `git.toml`) are data checked when
loaded: a file with an unknown key, a missing one, or a value of another type is refused,
naming the key."""

from __future__ import annotations

import re
from importlib import resources

import pytest

from plan_lsp.policy.sandbox import layout
from plan_lsp.policy.sandbox.git import (
    DYNAMIC_OVERRIDES,
    PROGRAM_WORDS,
    STATIC_OVERRIDES,
    Overrides,
)
from plan_lsp.policy.sandbox.layout import Tables, load_toml

TEXT = resources.files("plan_lsp.policy.sandbox").joinpath("layout.toml").read_text("utf-8")


def test_the_packaged_tables_are_the_module_names() -> None:
    tables = load_toml(Tables, "layout.toml", TEXT)
    assert layout.KEPT_VARIABLES == tables.kept_variables
    assert "PATH" in layout.KEPT_VARIABLES and "HOME" not in layout.KEPT_VARIABLES
    assert layout.FIXED_VARIABLES["GIT_SSH_COMMAND"] == "false"
    assert ".ssh" in layout.HOME_SECRETS and ".ssh" not in layout.HOME_VISIBLE
    assert layout.HOME_VISIBLE == tuple(t for t in tables.home_toolchains if t[0] == ".")
    assert (layout.NOBODY, layout.CPU_SECONDS, layout.DATA_KIB) == (65534, 600, 4 << 20)


def _edit(old: str, new: str) -> str:
    assert re.search(old, TEXT, re.M), old
    return re.sub(old, new, TEXT, count=1, flags=re.M)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("hidden_extra = []\n" + TEXT, "hidden_extra: Extra inputs are not permitted"),
        (_edit(r"^workspace_dir = .*$", ""), "workspace_dir: Field required"),
        (_edit(r"^kept_prefixes = .*$", 'kept_prefixes = "LC_"'), "kept_prefixes: Input should"),
        (_edit(r"^kept_variables = \[", "kept_variables = [1, "), "kept_variables.0: Input"),
        (_edit(r"^cpu_seconds = .*$", 'cpu_seconds = "600"'), "cpu_seconds: Input should be"),
        (_edit(r"^nobody = .*$", "nobody = true"), "nobody: Input should be a valid integer"),
        (_edit(r'^TERM = "dumb"$', "TERM = 0"), "fixed_variables.TERM: Input should be"),
        (_edit(r'^home_roots = \["/home"', 'home_roots = ["home"'), "home_roots: Value error"),
        (_edit(r'^    "/etc/shadow",', '    "/etc/../etc/shadow",'), "system_secrets: Value err"),
        (_edit(r'^    "\.ssh",', '    "../.ssh",'), "home_secrets: Value error, '../.ssh'"),
        (_edit(r"^workspace_dir = .*$", 'workspace_dir = "/x"'), "workspace_dir: Value error"),
    ],
)
def test_a_bad_file_is_refused_naming_the_key(text: str, named: str) -> None:
    with pytest.raises(ValueError, match=r"^layout\.toml: ") as refused:
        load_toml(Tables, "layout.toml", text)
    assert named in str(refused.value)


GIT_TEXT = resources.files("plan_lsp.policy.sandbox").joinpath("git.toml").read_text("utf-8")


def test_the_git_shim_overrides_are_data() -> None:
    assert ("core.hooksPath", "/dev/null") in STATIC_OVERRIDES
    assert ("filter.*.smudge", "") in DYNAMIC_OVERRIDES
    assert {"fsmonitor", "textconv", "sshcommand"} <= PROGRAM_WORDS


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("[hooks]\n" + GIT_TEXT, "hooks: Extra inputs are not permitted"),
        (GIT_TEXT.replace('"core.pager" = "cat"', '"core.pager" = false'), "static.core.pager:"),
        (GIT_TEXT.replace("program_words = [", "program_words = [1, "), "program_words.0:"),
        (GIT_TEXT.replace("[dynamic]", "[dynamics]"), "dynamic: Field required"),
    ],
)
def test_a_bad_git_file_is_refused_naming_the_key(text: str, named: str) -> None:
    assert text != GIT_TEXT
    with pytest.raises(ValueError, match=r"^git\.toml: ") as refused:
        load_toml(Overrides, "git.toml", text)
    assert named in str(refused.value)
