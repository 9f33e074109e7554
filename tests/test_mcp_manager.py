"""The MCP client manager against real server processes (tests/mcp_servers/fake_server.py):
lazy start, status, calls through the tool runner, failures, restarts, list changes, stop."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from plan_lsp.policy.execution import GateDecision
from plan_lsp.policy.safety import Safety, ToolDefinition
from plan_lsp.policy.sandbox import git_shim
from plan_lsp.protocol.state import WorkMode
from plan_lsp.tools.base import ToolContext, ToolResult
from plan_lsp.tools.bash import OUTPUT_CAP_CHARS
from plan_lsp.tools.mcp.config import McpSettings
from plan_lsp.tools.mcp.connection import MAX_RESTARTS
from plan_lsp.tools.mcp.manager import McpManager, server_env
from plan_lsp.tools.registry import ToolRegistry
from plan_lsp.tools.runner import ToolRunner
from tests.mcp_servers import READ_ONLY_HINTS, fake_command, hang_started, tool
from tests.needs import need
from tests.shell_attacks.harness import build_template
from tests.test_execution_gate import FakeEditor, FakePort

pytestmark = [pytest.mark.timeout(120), pytest.mark.process]

TOOLS = [
    tool("echo", "echo"),
    tool("fail", "error"),
    tool("broken", "protocol_error"),
    tool("hang", "hang"),
    tool("big", "big"),
    tool("data", "structured"),
    tool("env", "env"),
    tool("crash", "crash"),
    tool("grow", "add_tool"),
    tool("claims", "write", annotations=READ_ONLY_HINTS),
]


class AllowAll:
    """A gate that lets everything run: these tests are about the client, not the gate."""

    async def check(
        self,
        definition: ToolDefinition,
        arguments: dict[str, Any],
        run_id: str,
        allow_names: frozenset[str] | None,
    ) -> GateDecision:
        return GateDecision(True)

    def current_mode(self) -> WorkMode:
        return WorkMode.BUILD


class Harness:
    def __init__(self, tmp_path: Path, servers: list[dict[str, Any]], **kw: Any) -> None:
        self.ws = tmp_path / "ws"
        self.ws.mkdir(exist_ok=True)
        self.notices: list[str] = []
        self.changes = 0
        self.manager = McpManager(
            McpSettings.model_validate({"servers": servers}),
            self.ws,
            notify=self.notices.append,
            **kw,
        )
        self.manager.add_listener(self._changed)
        self.registry = ToolRegistry()
        self.runner = ToolRunner(self.registry, AllowAll())

    def _changed(self) -> None:
        self.changes += 1

    async def sync(self) -> None:
        await asyncio.wait_for(self.manager.sync(self.registry), 60)

    async def call(self, name: str, /, **arguments: Any) -> ToolResult:
        port = FakePort()
        ctx = ToolContext(
            [self.ws], self.ws / "plans", "run", FakeEditor(), port, lambda k, p: None
        )
        return await asyncio.wait_for(self.runner.call(name, json.dumps(arguments), ctx), 60)

    def state(self, name: str) -> dict[str, Any]:
        states = {s.name: s.model_dump(mode="json") for s in self.manager.status()}
        return states[name]


def fake(
    name: str = "fake", tools: list[dict[str, Any]] | None = None, **extra: Any
) -> dict[str, Any]:
    spec = {"tools": TOOLS if tools is None else tools, **extra.pop("spec", {})}
    return {"name": name, "command": fake_command(spec), **extra}


@pytest.fixture
async def h(tmp_path: Path) -> Any:
    harness = Harness(tmp_path, [fake(read_only_tools=["echo"], timeout_s=1)])
    yield harness
    await harness.manager.close()


async def test_servers_start_on_first_sync_and_report_status(h: Harness) -> None:
    assert h.state("fake") == {"name": "fake", "status": "configured", "error": None, "tools": []}
    await h.sync()
    state = h.state("fake")
    assert state["status"] == "ready" and state["error"] is None
    assert "mcp__fake__echo" in state["tools"] and len(state["tools"]) == len(TOOLS)
    safety = {d.name: d.safety for d in h.registry.definitions()}
    assert safety["mcp__fake__echo"] is Safety.READ_ONLY
    # annotations alone (untrusted) make nothing read-only
    assert safety["mcp__fake__claims"] is Safety.SIDE_EFFECT
    assert h.changes >= 2  # starting, ready


async def test_answers_become_observations(h: Harness) -> None:
    await h.sync()
    assert (await h.call("mcp__fake__echo", a=1)).content == '{"a": 1}'
    assert json.loads((await h.call("mcp__fake__data")).content)["files"] == 2
    failed = await h.call("mcp__fake__fail")
    assert (
        failed.is_error and json.loads(failed.content)["message"] == "the tool failed: disk on fire"
    )
    broken = json.loads((await h.call("mcp__fake__broken")).content)
    assert broken["error"] == "mcp_error" and "broken" in broken["message"]
    big = await h.call("mcp__fake__big", size=OUTPUT_CAP_CHARS * 3)
    assert len(big.content) < OUTPUT_CAP_CHARS + 200 and "cut from the middle" in big.content


async def test_a_call_that_hangs_times_out_and_the_server_keeps_serving(h: Harness) -> None:
    await h.sync()
    hung = json.loads((await h.call("mcp__fake__hang")).content)
    assert hung["error"] == "timeout" and "within 1 s" in hung["message"]
    assert (await h.call("mcp__fake__echo", b=2)).content == '{"b": 2}'


async def test_the_server_runs_in_the_workspace_without_the_models_keys(tmp_path: Path) -> None:
    environ = {
        **os.environ,
        "OPENAI_API_KEY": "sk-secret",
        "ANTHROPIC_API_KEY": "sk-ant",
        "PLAN_LSP_API_KEY": "k",
        "PLAN_LSP_CONFIG": "/x.toml",
        "KEEP_ME": "1",
    }
    h = Harness(tmp_path, [fake(env={"SERVER_TOKEN": "t"})], environ=environ)
    try:
        await h.sync()
        report = json.loads((await h.call("mcp__fake__env")).content)
    finally:
        await h.manager.close()
    assert Path(report["cwd"]) == h.ws
    env = report["env"]
    assert env["SERVER_TOKEN"] == "t" and env["KEEP_ME"] == "1"
    assert not {"OPENAI_API_KEY", "ANTHROPIC_API_KEY"} & set(env)
    assert not [k for k in env if k.startswith("PLAN_LSP_")]


@pytest.mark.parametrize(
    ("server", "reason"),
    [
        ({"command": ["/nonexistent/mcp-server"]}, "could not run '/nonexistent/mcp-server'"),
        ({"spec": {"start": "exit"}}, "refusing to start"),
        ({"spec": {"start": "hang"}, "startup_timeout_s": 1}, "did not start within 1 s"),
    ],
)
async def test_a_server_that_cannot_start_fails_with_its_reason(
    tmp_path: Path, server: dict[str, Any], reason: str
) -> None:
    entry = fake(**{k: v for k, v in server.items() if k != "command"})
    if "command" in server:
        entry["command"] = server["command"]
    h = Harness(tmp_path, [entry, fake("good", [tool("echo", "echo")])])
    try:
        await h.sync()
        state = h.state("fake")
        assert state["status"] == "failed" and reason in state["error"], state
        assert state["tools"] == []
        assert any(reason in n and "failed" in n for n in h.notices)
        # the other server is not held back
        assert h.registry.names() == ["mcp__good__echo"]
    finally:
        await h.manager.close()


async def test_unreadable_output_does_not_end_the_session(tmp_path: Path) -> None:
    h = Harness(tmp_path, [fake(spec={"start": "garbage"})])
    try:
        await h.sync()
        assert h.state("fake")["status"] == "ready"
        assert (await h.call("mcp__fake__echo", c=3)).content == '{"c": 3}'
    finally:
        await h.manager.close()


async def test_invalid_entries_are_failed_servers(tmp_path: Path) -> None:
    h = Harness(tmp_path, [{"name": "bad name", "command": ["x"]}, fake("ok", [])])
    try:
        await h.sync()
        assert h.state("bad name")["status"] == "failed"
        assert h.state("bad name")["error"].startswith("invalid configuration: name: ")
        assert any("is not started: invalid configuration" in n for n in h.notices)
        assert h.state("ok")["status"] == "ready"
    finally:
        await h.manager.close()


async def test_a_crash_restarts_the_server_and_repeated_crashes_stop_it(h: Harness) -> None:
    await h.sync()
    crashed = json.loads((await h.call("mcp__fake__crash")).content)
    assert crashed["error"] == "mcp_server_exited"
    await h.sync()  # waits for the restart
    assert h.state("fake")["status"] == "ready"
    assert any("exited unexpectedly" in n and f"(1 of {MAX_RESTARTS})" in n for n in h.notices)
    assert (await h.call("mcp__fake__echo", d=4)).content == '{"d": 4}'  # resets the count

    for _ in range(MAX_RESTARTS + 1):
        await h.call("mcp__fake__crash")
        await h.sync()
    state = h.state("fake")
    assert state["status"] == "failed" and "not restarted again" in state["error"]
    assert h.registry.names() == []  # its tools left the registry

    await asyncio.wait_for(h.manager._connections["fake"].start(), 60)  # started again
    await h.sync()
    assert h.state("fake")["status"] == "ready" and "mcp__fake__echo" in h.registry


async def test_list_changed_is_relisted_before_the_next_sync(h: Harness) -> None:
    await h.sync()
    assert (await h.call("mcp__fake__grow", name="late")).content == "added late"
    await h.sync()
    assert "mcp__fake__late" in h.registry
    assert h.registry.get("mcp__fake__late").definition.safety is Safety.SIDE_EFFECT  # type: ignore[union-attr]
    assert (await h.call("mcp__fake__late", e=5)).content == '{"e": 5}'


async def test_close_stops_the_process(h: Harness) -> None:
    await h.sync()
    pid = json.loads((await h.call("mcp__fake__env")).content)["pid"]
    await asyncio.wait_for(h.manager.close(), 30)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert h.state("fake")["status"] == "configured"
    unavailable = json.loads((await h.call("mcp__fake__echo")).content)
    assert unavailable["error"] == "mcp_server_unavailable"


async def test_stop_while_starting_does_not_wait_for_the_start(tmp_path: Path) -> None:
    h = Harness(tmp_path, [fake(spec={"start": "hang"}, startup_timeout_s=60)])
    syncing = asyncio.ensure_future(h.manager.sync(h.registry))
    while h.state("fake")["status"] != "starting":
        await asyncio.sleep(0)
    await asyncio.wait_for(h.manager.close(), 15)
    await asyncio.wait_for(syncing, 15)
    assert h.state("fake")["status"] == "configured"


async def test_a_cancelled_call_returns_at_once_and_the_server_keeps_serving(
    tmp_path: Path,
) -> None:
    h = Harness(tmp_path, [fake(timeout_s=300)])
    try:
        await h.sync()
        pending = asyncio.ensure_future(h.call("mcp__fake__hang"))
        await hang_started(h.ws)
        pending.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(pending, 10)
        assert (await h.call("mcp__fake__echo", f=6)).content == '{"f": 6}'
    finally:
        await h.manager.close()


async def test_the_calls_cancel_signal_ends_it_without_waiting_for_the_server(
    tmp_path: Path,
) -> None:
    h = Harness(tmp_path, [fake(timeout_s=300)])
    try:
        await h.sync()
        hang = h.registry.get("mcp__fake__hang")
        assert hang is not None
        ctx = ToolContext([h.ws], h.ws / "plans", "run", FakeEditor(), FakePort(), lambda k, p: 0)
        pending = asyncio.ensure_future(hang.run({}, ctx))
        await hang_started(h.ws)
        ctx.cancel.set()  # what a switch to plan mode or a cancelled run does
        result = await asyncio.wait_for(pending, 30)
        assert result.is_error and json.loads(result.content)["error"] == "cancelled"
        assert (await h.call("mcp__fake__echo", g=7)).content == '{"g": 7}'
    finally:
        await h.manager.close()


async def test_servers_get_the_plan_mode_git_hardening_in_every_mode(tmp_path: Path) -> None:
    """The shim first on PATH (also ahead of a PATH the server's own `env` sets) and as git's
    exec path, the fixed overrides in the environment after the user's own."""
    shim = git_shim()
    assert shim is not None
    environ = {**os.environ, "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "user.name",
               "GIT_CONFIG_VALUE_0": "me", "GIT_EXEC_PATH": "/tmp/evil"}  # fmt: skip
    own = {"PATH": "/opt/server/bin:/usr/bin:/bin"}
    h = Harness(tmp_path, [fake(env=own)], environ=environ)
    try:
        await h.sync()
        env = json.loads((await h.call("mcp__fake__env")).content)["env"]
    finally:
        await h.manager.close()
    assert env["PATH"].split(os.pathsep)[:2] == [str(shim.bin), "/opt/server/bin"]
    assert env["GIT_EXEC_PATH"] == str(shim.exec_dir)
    keys = {env[f"GIT_CONFIG_KEY_{n}"]: n for n in range(int(env["GIT_CONFIG_COUNT"]))}
    # shell_env drops the server's own GIT_CONFIG_*: only the hardening is left
    assert "user.name" not in keys
    assert {"core.fsmonitor", "core.hooksPath", "submodule.recurse"} <= set(keys)
    assert "diff.external" not in keys  # only the shim's --no-ext-diff makes it harmless
    own_git = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.fsmonitor",
               "GIT_CONFIG_VALUE_0": "evil"}  # fmt: skip
    merged = server_env({"PATH": "/usr/bin"}, own_git)
    assert merged["GIT_CONFIG_KEY_0"] == "core.fsmonitor"
    later = [n for n in range(1, int(merged["GIT_CONFIG_COUNT"]))
             if merged[f"GIT_CONFIG_KEY_{n}"] == "core.fsmonitor"]  # fmt: skip
    assert later and merged[f"GIT_CONFIG_VALUE_{later[0]}"] == "false"  # ours come last, win


@pytest.mark.parametrize("git", ["git", "/usr/bin/git"])
def test_a_servers_git_runs_no_program_of_the_repository(git: str, tmp_path: Path) -> None:
    """What an MCP git server runs (`git status`, `diff`, `log -p`, `show`, `blame`,
    `commit`) in a hostile repository, with the server's environment: by name through the
    shim nothing of the repository runs; a git named by its path still gets the fixed
    overrides (fsmonitor, hooks, pager), not the per-name ones (docs/security.md §6)."""
    if git.startswith("/"):
        need(Path(git).exists(), f"{git} does not exist here (Debian's git package)")
    canary = tmp_path / "canary"
    canary.mkdir()
    repo = tmp_path / "repo"
    build_template(repo, canary, tmp_path / "home")
    env = server_env({**os.environ, "HOME": str(tmp_path / "home")})
    env.update({"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.com",
                "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@example.com"})  # fmt: skip
    commands = [["status"], ["diff"], ["log", "-p", "-2"], ["show"], ["blame", "README.md"],
                ["commit", "-qam", "by the server"]]  # fmt: skip
    for args in commands:
        subprocess.run([git, *args], cwd=repo, env=env, capture_output=True, timeout=30,
                       check=False, stdin=subprocess.DEVNULL)  # fmt: skip
    ran = sorted(p.name for p in canary.iterdir() if p.name != "gpg")
    if git == "git":
        assert ran == []
    else:
        fixed = {"fsmonitor", "hook-pre-commit", "hook-post-commit", "pager"}
        assert not [r for r in ran if any(r.startswith(f) for f in fixed)], ran
