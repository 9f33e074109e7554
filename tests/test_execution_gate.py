"""Execution gate and tool runner: order of checks, prompts, re-check, audit, errors."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest

import plan_lsp.policy.shell  # noqa: F401  (the real classifier: its tests below need it)
from plan_lsp.policy.execution import ExecutionGate, GateDecision
from plan_lsp.policy.permissions import PermissionEngine
from plan_lsp.policy.ports import FileEdit, PermissionRequest
from plan_lsp.policy.safety import Safety, ToolDefinition
from plan_lsp.protocol.state import PermissionAnswer, PermissionMode, Question, WorkMode
from plan_lsp.session import Actor, Session, StateStore
from plan_lsp.tools.base import Tool, ToolContext, ToolResult
from plan_lsp.tools.registry import builtin_registry
from plan_lsp.tools.runner import ToolRunner
from tests.tool_facts import builtin_facts


@dataclass
class FakeClassification:
    allowed: bool
    reasons: list[str] = field(default_factory=list)
    capabilities: frozenset[str] = frozenset()


def fake_classify(command: str) -> FakeClassification:
    """Read-only: `ls …`, `cat …`, `git log …`; anything else is refused with a reason."""
    if command.split()[0] in ("ls", "cat") or command.startswith("git log"):
        return FakeClassification(True, [], frozenset({"read:filesystem"}))
    return FakeClassification(False, [f"`{command.split()[0]}` can change files"])


class FakePort:
    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.requests: list[PermissionRequest] = []
        self.on_ask: Callable[[PermissionRequest], object] | None = None
        self.fail = False

    async def request_permission(self, request: PermissionRequest) -> PermissionAnswer:
        self.requests.append(request)
        if self.on_ask is not None:
            self.on_ask(request)
        if self.fail:
            raise RuntimeError("client went away")
        return cast(PermissionAnswer, self.answers.pop(0) if self.answers else "reject_once")

    async def ask_questions(self, run_id: str, questions: list[Question]) -> None:
        return None


class FakeEditor:
    def open_document_text(self, path: Path) -> str | None:
        return None

    async def apply_to_open_document(self, edit: FileEdit) -> bool:
        return False


def _definition(name: str, safety: Safety, **extra: Any) -> ToolDefinition:
    return ToolDefinition(
        name=name,
        description=name,
        input_schema={"type": "object"},
        safety=safety,
        **{**builtin_facts(name), **extra},
    )


BASH = ToolDefinition(
    name="bash",
    description="shell",
    input_schema={
        "type": "object",
        "properties": {"command": {"type": "string"}, "timeout_s": {"type": "number"}},
        "required": ["command"],
    },
    safety=Safety.SIDE_EFFECT,
    classified_per_call=True,
    **builtin_facts("bash"),
)
READ = _definition("read_file", Safety.READ_ONLY)
WRITE = _definition("write_file", Safety.SIDE_EFFECT)
DEPLOY = _definition("deploy", Safety.SIDE_EFFECT)
TODO = _definition("todo_write", Safety.READ_ONLY, system=True)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = (tmp_path / "ws").resolve()
    (root / "src").mkdir(parents=True)
    return root


@pytest.fixture
def session(tmp_path: Path, ws: Path) -> Session:
    return Session(StateStore(tmp_path / "state.db"), ws, ws / ".plan-lsp" / "plans")


def _gate(
    session: Session,
    port: FakePort,
    *,
    plan_shell: str = "sandboxed",
    sandbox: str | None = "bwrap",
    classify: Callable[[str], FakeClassification] = fake_classify,
    **rules: list[str],
) -> ExecutionGate:
    return ExecutionGate(
        session,
        PermissionEngine(
            rules.get("allow", []),
            rules.get("ask", []),
            rules.get("deny", []),
            workspace_roots=[session.workspace],
        ),
        port,
        plan_shell=plan_shell,
        classify=classify,
        sandbox_probe=lambda: sandbox,
    )


def _decisions(session: Session) -> list[dict[str, Any]]:
    return [e.data for e in session.store.events(session.id, kinds=("gate_decision",))]


def _build(session: Session, pmode: PermissionMode = PermissionMode.ASK) -> None:
    session.set_mode(WorkMode.BUILD, Actor.USER)
    session.set_permission_mode(pmode, Actor.USER)


async def _check(gate: ExecutionGate, d: ToolDefinition, args: dict[str, Any]) -> GateDecision:
    return await gate.check(d, args, "run-1", None)


# -- the work-mode check comes first --------------------------------------------------------


@pytest.mark.parametrize("pmode", list(PermissionMode))
async def test_side_effect_in_plan_mode_is_refused_without_asking(
    session: Session, pmode: PermissionMode
) -> None:
    session.set_permission_mode(pmode, Actor.USER)
    port = FakePort("allow_once")
    gate = _gate(session, port, allow=["write_file", "deploy"])
    for definition in (WRITE, DEPLOY):
        decision = await _check(gate, definition, {"path": "src/a.py"})
        assert not decision.allowed
        assert decision.observation is not None
        assert decision.observation["error"] == "tool_not_allowed"
        assert decision.observation["tool"] == definition.name
        assert "plan mode" in decision.observation["reason"]
    assert port.requests == []


async def test_every_decision_is_recorded(session: Session) -> None:
    port = FakePort("allow_once", "reject_once")
    gate = _gate(session, port)
    await _check(gate, WRITE, {"path": "a"})
    _build(session)
    await _check(gate, READ, {"path": "a"})
    await _check(gate, WRITE, {"path": "a"})
    await _check(gate, WRITE, {"path": "b"})
    decisions = _decisions(session)
    assert [(d["tool"], d["mode"], d["decision"]) for d in decisions] == [
        ("write_file", "plan", "refuse"),
        ("read_file", "build", "allow"),
        ("write_file", "build", "allow"),
        ("write_file", "build", "deny"),
    ]
    assert all(d["reason"] and d["runId"] == "run-1" for d in decisions)


# -- permissions ----------------------------------------------------------------------------


async def test_ask_then_user_answers(session: Session) -> None:
    _build(session)
    port = FakePort("allow_once", "reject_once")
    gate = _gate(session, port)
    assert (await _check(gate, WRITE, {"path": "src/a.py", "content": "x"})).allowed
    assert port.requests[0].summary == "write_file: src/a.py"
    assert port.requests[0].run_id == "run-1"
    denied = await _check(gate, WRITE, {"path": "src/a.py"})
    assert not denied.allowed and denied.observation is not None
    assert denied.observation["error"] == "permission_denied"


async def test_failed_or_garbled_prompt_is_a_no(session: Session) -> None:
    _build(session)
    port = FakePort()
    port.fail = True
    assert not (await _check(_gate(session, port), WRITE, {"path": "a"})).allowed
    garbled = FakePort("yes please")
    assert not (await _check(_gate(session, garbled), WRITE, {"path": "a"})).allowed


async def test_deny_rule_refuses_without_asking(session: Session) -> None:
    _build(session, PermissionMode.YOLO)
    port = FakePort("allow_once")
    decision = await _check(
        _gate(session, port, deny=["write_file(src/**)"]), WRITE, {"path": "src/a.py"}
    )
    assert decision.observation is not None
    assert decision.observation["error"] == "permission_denied"
    assert "src/**" in decision.reason
    assert port.requests == []


async def test_allow_always_is_remembered_in_its_work_mode_only(session: Session) -> None:
    _build(session, PermissionMode.STRICT)
    port = FakePort("allow_always")
    gate = _gate(session, port)
    assert (await _check(gate, READ, {"path": "src/a.py"})).allowed
    assert (await _check(gate, READ, {"path": "src/a.py"})).allowed
    assert len(port.requests) == 1
    session.set_mode(WorkMode.PLAN, Actor.USER)
    assert not (await _check(gate, READ, {"path": "src/a.py"})).allowed  # asks: reject_once
    assert len(port.requests) == 2


async def test_toggle_to_plan_while_prompt_is_open_still_refuses(session: Session) -> None:
    _build(session)
    port = FakePort("allow_once")
    port.on_ask = lambda request: session.set_mode(WorkMode.PLAN, Actor.USER)
    decision = await _check(_gate(session, port), WRITE, {"path": "src/a.py"})
    assert not decision.allowed
    assert decision.observation is not None
    assert decision.observation["error"] == "tool_not_allowed"
    assert "switched to plan mode" in decision.reason
    last = _decisions(session)[-1]
    assert (last["decision"], last["mode"], last["stage"]) == ("refuse", "plan", "recheck")


async def test_allow_always_given_while_toggling_applies_to_the_mode_it_was_asked_in(
    session: Session,
) -> None:
    _build(session, PermissionMode.STRICT)
    port = FakePort("allow_always")
    port.on_ask = lambda request: session.set_mode(WorkMode.PLAN, Actor.USER)
    gate = _gate(session, port)
    assert (await _check(gate, READ, {"path": "x"})).allowed  # read-only: fine in plan too
    assert gate.permissions.rules()[0][2] == "build"


# -- allow-lists ----------------------------------------------------------------------------


async def test_allow_list(session: Session) -> None:
    _build(session, PermissionMode.YOLO)
    gate = _gate(session, FakePort())
    only_read = frozenset({"read_file"})
    refused = await gate.check(WRITE, {"path": "a"}, "run-1", only_read)
    assert refused.observation is not None and refused.observation["error"] == "tool_not_allowed"
    assert (await gate.check(TODO, {"todos": []}, "run-1", only_read)).allowed
    session.set_mode(WorkMode.PLAN, Actor.USER)
    system_side_effect = _definition("sys_write", Safety.SIDE_EFFECT, system=True)
    assert not (await gate.check(system_side_effect, {}, "run-1", only_read)).allowed


# -- bash -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("plan_shell", "sandbox", "expected_sandbox"),
    [("sandboxed", "bwrap", True), ("sandboxed", None, False), ("classified", "bwrap", False)],
)
async def test_plan_mode_read_only_bash(
    session: Session, plan_shell: str, sandbox: str | None, expected_sandbox: bool
) -> None:
    port = FakePort()
    gate = _gate(session, port, plan_shell=plan_shell, sandbox=sandbox)
    decision = await _check(gate, BASH, {"command": "git log -3"})
    assert decision.allowed and decision.sandbox is expected_sandbox
    assert port.requests == []


async def test_plan_mode_bash_not_proven_read_only_is_refused_with_reasons(
    session: Session,
) -> None:
    session.set_permission_mode(PermissionMode.YOLO, Actor.USER)
    port = FakePort("allow_once")
    gate = _gate(session, port, allow=["bash"])
    decision = await _check(gate, BASH, {"command": "rm -rf src"})
    assert decision.observation is not None
    assert decision.observation["error"] == "tool_not_allowed"
    assert "`rm` can change files" in decision.reason
    assert port.requests == []


async def test_plan_shell_off_refuses_even_read_only_bash(session: Session) -> None:
    gate = _gate(session, FakePort(), plan_shell="off")
    decision = await _check(gate, BASH, {"command": "ls"})
    assert not decision.allowed and "planShell" in decision.reason


async def test_classifier_failure_fails_closed(session: Session) -> None:
    def broken(command: str) -> FakeClassification:
        raise RuntimeError("parser exploded")

    decision = await _check(_gate(session, FakePort(), classify=broken), BASH, {"command": "ls"})
    assert not decision.allowed and "classifier failed" in decision.reason

    def missing(command: str) -> FakeClassification:
        raise ImportError("no module")

    decision = await _check(_gate(session, FakePort(), classify=missing), BASH, {"command": "ls"})
    assert not decision.allowed and "not available" in decision.reason


@pytest.mark.parametrize(
    ("pmode", "command", "asks"),
    [
        (PermissionMode.ASK, "ls -la", False),
        (PermissionMode.AUTO_EDIT, "git log", False),
        (PermissionMode.YOLO, "ls", False),
        (PermissionMode.STRICT, "ls", True),
        (PermissionMode.ASK, "make", True),
        (PermissionMode.AUTO_EDIT, "make", True),
        (PermissionMode.YOLO, "make", False),
    ],
)
async def test_build_mode_bash_prompts(
    session: Session, pmode: PermissionMode, command: str, asks: bool
) -> None:
    _build(session, pmode)
    port = FakePort("allow_once")
    decision = await _check(_gate(session, port), BASH, {"command": command})
    assert decision.allowed and not decision.sandbox
    assert bool(port.requests) is asks


async def test_toggle_to_plan_during_bash_prompt_rechecks_with_classifier(session: Session) -> None:
    _build(session, PermissionMode.STRICT)
    port = FakePort("allow_once", "allow_once")
    port.on_ask = lambda request: session.set_mode(WorkMode.PLAN, Actor.USER)
    gate = _gate(session, port)
    read_only = await _check(gate, BASH, {"command": "ls"})
    assert read_only.allowed and read_only.sandbox  # now in plan mode: sandboxed
    session.set_mode(WorkMode.BUILD, Actor.USER)
    writer = await _check(gate, BASH, {"command": "make"})
    assert not writer.allowed


# -- the runner -----------------------------------------------------------------------------


def _ctx(ws: Path, port: FakePort) -> ToolContext:
    return ToolContext(
        workspace_roots=[ws],
        plans_dir=ws / ".plan-lsp" / "plans",
        run_id="run-1",
        editor=FakeEditor(),
        user=port,
        emit=lambda kind, payload: None,
    )


async def test_seed_scenario_write_file_in_plan_mode(session: Session, ws: Path) -> None:
    """The model calls write_file in plan mode although it was never offered."""
    port = FakePort("allow_always")
    registry = builtin_registry()
    runner = ToolRunner(registry, _gate(session, port))
    raw = json.dumps({"path": "src/app.py", "content": "print('hi')\n"})
    result = await runner.call("write_file", raw, _ctx(ws, port))
    assert result.is_error and result.data is not None
    assert set(result.data) == {"error", "tool", "reason"}
    assert (result.data["error"], result.data["tool"]) == ("tool_not_allowed", "write_file")
    assert "plan mode" in result.data["reason"]
    assert json.loads(result.content)["error"] == "tool_not_allowed"
    assert not (ws / "src" / "app.py").exists()
    assert port.requests == []
    assert _decisions(session)[-1]["decision"] == "refuse"


def _recording_tool(
    name: str, safety: Safety, calls: list[ToolContext], *, behaviour: str = "ok", **extra: Any
) -> Tool:
    async def run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        calls.append(ctx)
        if behaviour == "raise":
            raise KeyError("boom")
        if behaviour == "hang":
            await asyncio.Event().wait()
        return ToolResult(content=f"ran {name}")

    return Tool(
        ToolDefinition(
            name=name,
            description=name,
            input_schema={
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "count": {"type": "integer", "minimum": 0},
                    "kind": {"type": "string", "enum": ["a", "b"]},
                    "items": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"n": {"type": "integer"}},
                            "required": ["n"],
                        },
                    },
                },
                "required": ["path"],
                "additionalProperties": False,
            },
            safety=safety,
            **extra,
        ),
        run,
    )


@pytest.fixture
def calls() -> list[ToolContext]:
    return []


@pytest.fixture
def runner(session: Session, calls: list[ToolContext]) -> ToolRunner:
    _build(session, PermissionMode.YOLO)
    registry = builtin_registry()
    registry.register(_recording_tool("probe", Safety.READ_ONLY, calls))
    registry.register(_recording_tool("crash", Safety.READ_ONLY, calls, behaviour="raise"))
    registry.register(
        _recording_tool("hang", Safety.READ_ONLY, calls, behaviour="hang", timeout_s=0.05)
    )
    registry.register(
        _recording_tool("bash", Safety.SIDE_EFFECT, calls, classified_per_call=True), replace=True
    )
    return ToolRunner(registry, _gate(session, FakePort()))


@pytest.mark.parametrize(
    ("name", "raw", "code", "words"),
    [
        ("nope", "{}", "unknown_tool", "no tool named 'nope'"),
        ("probe", "{not json", "invalid_arguments", "not valid JSON"),
        ("probe", "[1, 2]", "invalid_arguments", "must be a JSON object"),
        ("probe", "{}", "invalid_arguments", "missing required field 'path'"),
        ("probe", '{"path": 3}', "invalid_arguments", "'path' must be string"),
        ("probe", '{"path": "a", "count": true}', "invalid_arguments", "'count' must be integer"),
        ("probe", '{"path": "a", "count": -1}', "invalid_arguments", "'count' must be at least 0"),
        ("probe", '{"path": "a", "kind": "c"}', "invalid_arguments", "'kind' must be one of"),
        ("probe", '{"path": "a", "extra": 1}', "invalid_arguments", "unknown field 'extra'"),
        (
            "probe",
            '{"path": "a", "items": [{"n": 1}, {}]}',
            "invalid_arguments",
            "missing required field 'items[1].n'",
        ),
        ("crash", '{"path": "a"}', "tool_failed", "KeyError"),
        ("hang", '{"path": "a"}', "timeout", "did not finish"),
    ],
)
async def test_runner_errors(
    runner: ToolRunner, ws: Path, name: str, raw: str, code: str, words: str
) -> None:
    result = await runner.call(name, raw, _ctx(ws, FakePort()))
    assert result.is_error and result.data is not None
    assert result.data["error"] == code
    assert words in result.data["message"]


async def test_runner_runs_and_empty_arguments_mean_none(
    runner: ToolRunner, ws: Path, calls: list[ToolContext]
) -> None:
    ok = await runner.call("probe", '{"path": "a", "count": 2.0}', _ctx(ws, FakePort()))
    assert ok.content == "ran probe"
    listing = await runner.call("list_dir", "", _ctx(ws, FakePort()))
    assert not listing.is_error


async def test_runner_sets_sandbox_per_call_and_does_not_leak_it(
    runner: ToolRunner, session: Session, ws: Path, calls: list[ToolContext]
) -> None:
    session.set_mode(WorkMode.PLAN, Actor.USER)
    ctx = _ctx(ws, FakePort())
    tool_args = {"command": "ls"}
    runner.registry.register(_bash_like(calls), replace=True)
    await runner.call("bash", json.dumps(tool_args), ctx)
    assert calls[-1].sandbox_shell is True and ctx.sandbox_shell is False
    session.set_mode(WorkMode.BUILD, Actor.USER)
    await runner.call("bash", json.dumps(tool_args), ctx)
    assert calls[-1].sandbox_shell is False
    assert calls[-1].extra["work_mode"]() is WorkMode.BUILD


def _bash_like(calls: list[ToolContext]) -> Tool:
    async def run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        calls.append(ctx)
        return ToolResult(content="ok")

    return Tool(BASH, run)


async def test_gate_failure_refuses(ws: Path, calls: list[ToolContext]) -> None:
    class BrokenGate:
        async def check(self, *args: Any) -> GateDecision:
            raise RuntimeError("bug")

        def current_mode(self) -> WorkMode:
            return WorkMode.BUILD

    registry = builtin_registry()
    registry.register(_recording_tool("probe", Safety.READ_ONLY, calls))
    result = await ToolRunner(registry, BrokenGate()).call(
        "probe", '{"path": "a"}', _ctx(ws, FakePort())
    )
    assert result.data is not None and result.data["error"] == "tool_not_allowed"
    assert calls == []


async def test_cancellation_propagates(runner: ToolRunner, ws: Path) -> None:
    runner.registry.unregister("hang")
    calls: list[ToolContext] = []
    runner.registry.register(_recording_tool("hang", Safety.READ_ONLY, calls, behaviour="hang"))
    task = asyncio.create_task(runner.call("hang", '{"path": "a"}', _ctx(ws, FakePort())))
    while not calls:
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_toggle_to_plan_during_an_edit_still_refuses_the_write(
    session: Session, ws: Path
) -> None:
    """A third wall: the edit tool asks for the mode when it applies the change."""
    _build(session, PermissionMode.YOLO)

    class TogglingEditor(FakeEditor):
        def open_document_text(self, path: Path) -> str | None:
            session.set_mode(WorkMode.PLAN, Actor.USER)
            return None

    port = FakePort()
    ctx = _ctx(ws, port)
    ctx.editor = TogglingEditor()
    runner = ToolRunner(builtin_registry(), _gate(session, port))
    result = await runner.call("write_file", '{"path": "src/x.py", "content": "x"}', ctx)
    assert result.data is not None and result.data["error"] == "edit_refused"
    assert not (ws / "src" / "x.py").exists()


@pytest.mark.parametrize("command", ["rm -rf src", "echo hi > src/a.py", "sed -i s/a/b/ f"])
async def test_real_classifier_refuses_writing_commands_in_plan_mode(
    session: Session, command: str
) -> None:
    port = FakePort("allow_once")
    gate = ExecutionGate(
        session,
        PermissionEngine(["bash"], workspace_roots=[session.workspace]),
        port,
        plan_shell="classified",
    )
    decision = await _check(gate, BASH, {"command": command})
    assert not decision.allowed and decision.observation is not None
    assert decision.observation["error"] == "tool_not_allowed"
    assert port.requests == []


# -- the real classifier at the protection level in force ----------------------------------


def _real_gate(
    session: Session,
    port: FakePort,
    *,
    sandbox: str | None,
    plan_network: bool = False,
    hazards: list[str] | None = None,
) -> ExecutionGate:
    return ExecutionGate(
        session,
        PermissionEngine(workspace_roots=[session.workspace]),
        port,
        plan_shell="sandboxed",
        sandbox_probe=lambda: sandbox,
        plan_network=plan_network,
        git_hazards=lambda repo, shell, roots: list(hazards or []),
    )


@pytest.mark.parametrize(
    ("sandbox", "command", "allowed"),
    [
        ("bubblewrap", "frobnicate --now", True),  # sandboxed: the sandbox holds it
        (None, "frobnicate --now", False),  # no sandbox: classified, not in the allow-list
        ("bubblewrap", "rm -rf src", False),  # intent to change things: refused anyway
        (None, "cat src/a.py", True),
        (None, "cat /etc/passwd", False),  # outside the session's workspace roots
        ("bubblewrap", "cat /etc/passwd", True),  # the sandbox hides what matters
    ],
)
async def test_plan_mode_classifies_at_the_protection_level_in_force(
    session: Session, sandbox: str | None, command: str, allowed: bool
) -> None:
    decision = await _check(
        _real_gate(session, FakePort(), sandbox=sandbox), BASH, {"command": command}
    )
    assert decision.allowed is allowed, decision.reason
    if allowed:
        assert decision.sandbox is (sandbox is not None)


async def test_plan_network_lets_sandboxed_reads_use_the_network(session: Session) -> None:
    command = {"command": "curl -s https://example.com"}
    off = await _check(_real_gate(session, FakePort(), sandbox="bubblewrap"), BASH, command)
    assert not off.allowed and "read:network" in off.reason
    gate = _real_gate(session, FakePort(), sandbox="bubblewrap", plan_network=True)
    assert (await _check(gate, BASH, command)).allowed


@pytest.mark.parametrize(("command", "asks"), [("cat src/a.py", False), ("frobnicate", True)])
async def test_build_mode_auto_allows_only_what_the_strict_rules_prove(
    session: Session, command: str, asks: bool
) -> None:
    _build(session, PermissionMode.ASK)
    port = FakePort("allow_once")
    gate = _real_gate(session, port, sandbox="bubblewrap")
    decision = await _check(gate, BASH, {"command": command})
    assert decision.allowed and not decision.sandbox
    assert bool(port.requests) is asks


async def test_hostile_git_configuration_refuses_git_without_a_sandbox(session: Session) -> None:
    hazard = "core.fsmonitor (.git/config) names a program git may run"
    port = FakePort()
    gate = _real_gate(session, port, sandbox=None, hazards=[hazard])
    decision = await _check(gate, BASH, {"command": "git status"})
    assert not decision.allowed and hazard in decision.reason
    assert (await _check(gate, BASH, {"command": "ls src"})).allowed
    boxed = _real_gate(session, port, sandbox="bubblewrap", hazards=[hazard])
    assert (await _check(boxed, BASH, {"command": "git status"})).allowed
    _build(session, PermissionMode.ASK)
    port = FakePort("allow_once")
    built = _real_gate(session, port, sandbox="bubblewrap", hazards=[hazard])
    assert (await _check(built, BASH, {"command": "git status"})).allowed
    assert port.requests  # not proven read-only: the user is asked


@pytest.mark.process
async def test_blame_refused_when_the_repository_points_it_outside(
    session: Session, tmp_path: Path
) -> None:
    """`git blame` prints the first line of every `blame.ignoreRevsFile` that is not an
    object name: a repository must not point it outside the workspace."""
    ws = session.workspace
    secret = tmp_path / "secret.txt"
    secret.write_text("token-123\n")
    (ws / "f.txt").write_text("a\n")
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(tmp_path)}
    subprocess.run(["git", "init", "-q", str(ws)], check=True, env=env, timeout=30)
    gate = ExecutionGate(
        session,
        PermissionEngine(workspace_roots=[ws]),
        FakePort(),
        plan_shell="classified",
        sandbox_probe=lambda: None,
    )
    assert (await _check(gate, BASH, {"command": "git blame f.txt"})).allowed
    subprocess.run(
        ["git", "-C", str(ws), "config", "blame.ignoreRevsFile", str(secret)],
        check=True, env=env, timeout=30,
    )  # fmt: skip
    refused = await _check(gate, BASH, {"command": "git blame f.txt"})
    assert not refused.allowed and "blame.ignoreRevsFile" in refused.reason
    assert (await _check(gate, BASH, {"command": "git log -1"})).allowed


def test_the_runner_is_the_only_call_site_of_tool_implementations() -> None:
    """No module but tools/runner.py calls a Tool's implementation (`<tool>.run(args, ctx)`)."""
    import ast

    import plan_lsp

    package = Path(plan_lsp.__file__).parent
    offenders = []
    for source in package.rglob("*.py"):
        if source.relative_to(package).as_posix() == "tools/runner.py":
            continue
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            owner = node.func.value
            called_on_tool = (isinstance(owner, ast.Name) and "tool" in owner.id.lower()) or (
                isinstance(owner, ast.Attribute) and "tool" in owner.attr.lower()
            )
            if node.func.attr == "run" and called_on_tool and len(node.args) == 2:
                offenders.append(f"{source.relative_to(package)}:{node.lineno}")
    assert offenders == []
