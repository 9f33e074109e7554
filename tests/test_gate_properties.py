"""Property: whatever the interleaving of mode toggles, permission modes, rules, user answers
and tool calls, no side-effect tool runs while the session is in plan mode and nothing
outside the plans directory changes unless the session was in build mode when it changed.

`HYPOTHESIS_PROFILE=nightly` runs 10,000 examples; the default CI profile runs 200.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.strategies import DrawFn, composite

from plan_lsp.policy.execution import ExecutionGate
from plan_lsp.policy.permissions import PermissionEngine, RuleScope
from plan_lsp.policy.ports import FileEdit, PermissionRequest
from plan_lsp.policy.safety import Safety, ToolDefinition
from plan_lsp.policy.workspace_edit import apply_file_edit
from plan_lsp.protocol.state import PermissionAnswer, PermissionMode, Question, WorkMode
from plan_lsp.session import Actor, Session, StateStore
from plan_lsp.tools.base import Tool, ToolContext, ToolResult
from plan_lsp.tools.registry import builtin_registry
from plan_lsp.tools.runner import ToolRunner
from tests.tool_facts import builtin_facts

settings.register_profile(
    "ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "nightly", max_examples=10_000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
# The profile in force (tests/conftest.py: `dev` for local tiers, `ci`, `nightly`).
PROFILE = settings.get_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

READ_ONLY_COMMANDS = frozenset({"ls", "git log", "cat src/a.py"})


@dataclass
class Classification:
    allowed: bool
    reasons: list[str] = field(default_factory=list)


def classify(command: str) -> Classification:
    if command in READ_ONLY_COMMANDS:
        return Classification(True)
    return Classification(False, [f"{command!r} may change things"])


# -- the world one example runs in ----------------------------------------------------------


@dataclass
class Execution:
    tool: str
    mode: WorkMode
    sandbox: bool
    arguments: dict[str, Any]


class World:
    def __init__(self, root: Path, mode: WorkMode, plan_shell: str, sandbox: str | None) -> None:
        self.root = root
        self.ws = root / "ws"
        self.plans = self.ws / ".plan-lsp" / "plans"
        (self.ws / "src").mkdir(parents=True)
        self.plans.mkdir(parents=True)
        (root / "outside").mkdir()
        (self.ws / "src" / "a.py").write_text("orig\n")
        (self.ws / "link").symlink_to(root / "outside")
        self.session = Session(
            StateStore(root / "db" / "state.db"), self.ws, self.plans, default_mode=mode
        )
        self.executions: list[Execution] = []
        self.buffers: dict[Path, str] = {}
        self.answer: PermissionAnswer = "reject_once"
        self.toggle_in_prompt: WorkMode | None = None
        self.toggle_in_run = False
        self.plan_shell = plan_shell
        self.sandbox = sandbox
        self.engine = PermissionEngine(workspace_roots=[self.ws])
        self.gate = ExecutionGate(
            self.session,
            self.engine,
            self,
            plan_shell=plan_shell,
            classify=classify,
            sandbox_probe=lambda: sandbox,
        )
        registry = builtin_registry()
        registry.register(self._recording_tool(_BASH), replace=True)
        registry.register(self._recording_tool(_DEPLOY))
        registry.register(self._recording_tool(_PEEK))
        registry.register(Tool(_PLAN_WRITE, self._plan_write))
        self.runner = ToolRunner(registry, self.gate)
        self.ctx = ToolContext(
            workspace_roots=[self.ws],
            plans_dir=self.plans,
            run_id="run",
            editor=self,
            user=self,
            emit=lambda kind, payload: None,
        )

    # PermissionPort / UserPort
    async def request_permission(self, request: PermissionRequest) -> PermissionAnswer:
        if self.toggle_in_prompt is not None:
            self.session.set_mode(self.toggle_in_prompt, Actor.USER)
        return self.answer

    async def ask_questions(self, run_id: str, questions: list[Question]) -> None:
        return None

    # EditorPort
    def open_document_text(self, path: Path) -> str | None:
        if self.toggle_in_run:
            self.toggle_in_run = False
            self.session.set_mode(WorkMode.PLAN, Actor.USER)
        return self.buffers.get(Path(path))

    async def apply_to_open_document(self, edit: FileEdit) -> bool:
        self.buffers[Path(edit.path)] = edit.new_text
        return True

    def _recording_tool(self, definition: ToolDefinition) -> Tool:
        async def run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
            self.executions.append(
                Execution(definition.name, self.session.mode, ctx.sandbox_shell, args)
            )
            return ToolResult(content="done")

        return Tool(definition, run)

    async def _plan_write(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        name = args.get("plan_filename") or "PLAN.md"
        result = await apply_file_edit(
            FileEdit(path=self.plans / name, new_text=args["content"]),
            self.session.mode,
            self.plans,
            [self.ws],
            self,
        )
        return ToolResult(content=result.reason or "ok", is_error=not result.applied)

    def snapshot(self) -> dict[str, bytes]:
        """Every file under the example's root (the state database aside), and every buffer."""
        files: dict[str, bytes] = {}
        for directory, _dirs, names in os.walk(self.root):
            for name in names:
                path = Path(directory) / name
                if (self.root / "db") in path.parents:
                    continue
                files[str(path)] = path.read_bytes()
        for path, text in self.buffers.items():
            files[f"buffer:{path}"] = text.encode()
        return files

    def in_plans(self, key: str) -> bool:
        path = Path(key.removeprefix("buffer:"))
        return path.resolve().is_relative_to(self.plans.resolve())


def _tool(name: str, safety: Safety, **extra: Any) -> ToolDefinition:
    return ToolDefinition(
        name=name,
        description=name,
        input_schema={"type": "object"},
        safety=safety,
        **{**builtin_facts(name), **extra},
    )


_BASH = _tool("bash", Safety.SIDE_EFFECT, classified_per_call=True)
_DEPLOY = _tool("deploy", Safety.SIDE_EFFECT)
_PEEK = _tool("peek", Safety.READ_ONLY)
_PLAN_WRITE = _tool("plan_write", Safety.PLAN_FILE)

# -- strategies -----------------------------------------------------------------------------

PATHS = [
    "src/a.py",
    "src/new.py",
    "../outside/x.txt",
    "link/x.txt",
    ".plan-lsp/plans/PLAN.md",
    ".plan-lsp/plans/../../src/a.py",
]
COMMANDS = [*sorted(READ_ONLY_COMMANDS), "make", "rm -rf src", "git push", "ls; rm -rf src"]
RULES = [
    "write_file",
    "write_file(src/**)",
    "edit_file",
    "bash",
    "bash(ls *)",
    "bash(rm *)",
    "deploy",
    "read_file",
    "plan_write",
    "*",
]
ANSWERS: list[PermissionAnswer] = ["allow_once", "allow_always", "reject_once", "reject_always"]


@composite
def tool_calls(draw: DrawFn) -> tuple[str, dict[str, Any]]:
    name = draw(
        st.sampled_from(
            ["write_file", "edit_file", "bash", "deploy", "peek", "read_file", "plan_write"]
        )
    )
    if name == "write_file":
        return name, {"path": draw(st.sampled_from(PATHS)), "content": "changed\n"}
    if name == "edit_file":
        return name, {
            "path": draw(st.sampled_from(PATHS)),
            "old_text": "orig",
            "new_text": "edited",
        }
    if name == "bash":
        return name, {"command": draw(st.sampled_from(COMMANDS))}
    if name == "read_file":
        return name, {"path": draw(st.sampled_from(PATHS))}
    if name == "plan_write":
        filename = draw(st.sampled_from([None, "PLAN.md", "../../src/a.py", "../x.md"]))
        args: dict[str, Any] = {"content": "# plan\n"}
        if filename:
            args["plan_filename"] = filename
        return name, args
    return name, {}


steps = st.one_of(
    st.tuples(st.just("mode"), st.sampled_from(list(WorkMode))),
    st.tuples(st.just("pmode"), st.sampled_from(list(PermissionMode))),
    st.tuples(
        st.just("rule"),
        st.sampled_from(list(RuleScope)),
        st.sampled_from(["allow", "ask", "deny"]),
        st.sampled_from(RULES),
    ),
    st.tuples(st.just("open"), st.sampled_from(["src/a.py", ".plan-lsp/plans/PLAN.md"])),
    st.tuples(
        st.just("call"),
        tool_calls(),
        st.sampled_from(ANSWERS),
        st.sampled_from([None, WorkMode.PLAN, WorkMode.BUILD]),
        st.booleans(),
    ),
)


# -- the property ---------------------------------------------------------------------------


async def _run(world: World, script: list[tuple[Any, ...]]) -> None:
    session = world.session
    for step in script:
        kind = step[0]
        if kind == "mode":
            session.set_mode(step[1], Actor.USER)
        elif kind == "pmode":
            session.set_permission_mode(step[1], Actor.USER)
        elif kind == "rule":
            _kind, scope, verdict, rule = step
            world.engine.add_rules(
                scope,
                allow=[rule] if verdict == "allow" else [],
                ask=[rule] if verdict == "ask" else [],
                deny=[rule] if verdict == "deny" else [],
            )
        elif kind == "open":
            path = (world.ws / step[1]).resolve()
            world.buffers[path] = "orig\nbuffer\n"
        else:
            _kind, (name, args), answer, toggle_in_prompt, toggle_in_run = step
            world.answer = answer
            world.toggle_in_prompt = toggle_in_prompt
            world.toggle_in_run = toggle_in_run
            before = world.snapshot()
            executed = len(world.executions)
            await world.runner.call(name, json.dumps(args), world.ctx)
            world.toggle_in_prompt, world.toggle_in_run = None, False
            _check_call(world, before, executed)


def _check_call(world: World, before: dict[str, bytes], executed: int) -> None:
    for execution in world.executions[executed:]:
        if execution.mode is WorkMode.PLAN:
            assert execution.tool != "deploy", "a side-effect tool ran in plan mode"
            if execution.tool == "bash":
                assert classify(execution.arguments["command"]).allowed
                expected = world.plan_shell == "sandboxed" and world.sandbox is not None
                assert execution.sandbox is expected
        elif execution.tool == "bash":
            assert not execution.sandbox
    after = world.snapshot()
    changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    for key in changed:
        path = Path(key.removeprefix("buffer:"))
        assert path.resolve().is_relative_to(world.ws.resolve()), f"wrote outside: {key}"
        if not world.in_plans(key):
            assert world.session.mode is WorkMode.BUILD, f"{key} changed in plan mode"


@settings(PROFILE)
@given(
    mode=st.sampled_from(list(WorkMode)),
    plan_shell=st.sampled_from(["off", "classified", "sandboxed"]),
    sandbox=st.sampled_from([None, "bwrap"]),
    script=st.lists(steps, min_size=1, max_size=14),
)
def test_plan_mode_is_never_breached(
    mode: WorkMode, plan_shell: str, sandbox: str | None, script: list[tuple[Any, ...]]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        world = World(Path(tmp).resolve(), mode, plan_shell, sandbox)
        try:
            asyncio.run(_run(world, script))
        finally:
            world.session.store.close()
