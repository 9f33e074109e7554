"""The session core without any front-end protocol: a workspace's workflow (prompt, plan,
approve, Do, reject with and without feedback, mode switches, refusals) driven through
`plan_lsp.core.workflow` with an in-memory front-end, as the LSP server and the ACP agent
drive it. No server process, no sandbox: the scripted model only reads, plans and edits."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from plan_lsp.core import Refused, Workspaces, workflow
from plan_lsp.core.frontend import AgentPortsFor, BufferEdit, Notify
from plan_lsp.core.plain_ports import DraftProgress, NoEditor
from plan_lsp.policy.ports import PermissionRequest
from plan_lsp.policy.sandbox_probe import SandboxStatus
from plan_lsp.protocol.state import PermissionAnswer, PermissionMode, Question, WorkMode
from plan_lsp.protocol.updates import (
    UPDATE_MODELS,
    DoneUpdate,
    ModeChangedUpdate,
    PermissionUpdate,
    PromptUpdate,
    ToolResultUpdate,
    Update,
)
from plan_lsp.session import sha256_text
from tests.turns import GREETING_EDIT, PLAN_TEXT, call, calls, plan_turns


def plan_then_do_turns() -> list[dict[str, Any]]:
    """Research, a write and an edit the plan-mode gate refuses, the plan, then the Do run's
    edit."""
    return [
        calls(call("read_file", path="hello.py")),
        calls(
            call("write_file", path="hello.py", content="oops"),
            call("edit_file", path="hello.py", old_text="hi", new_text="x"),
        ),
        *plan_turns(),
        calls(GREETING_EDIT),
        {"text": "Done: the greeting is updated."},
    ]


def _script(path: Path, turns: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"chunk": 16, "turns": turns}))
    return path


NO_SANDBOX = SandboxStatus(None, "no sandbox in unit tests", False, 0.0)


@pytest.fixture(autouse=True)
def _no_sandbox_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    """The unit tier starts no process: the sandbox's self-test is answered here (plan-mode
    shell commands would go to the classifier alone; these scripts run none)."""
    for module in ("plan_lsp.core.runs", "plan_lsp.core.workspace"):
        monkeypatch.setattr(f"{module}.sandbox_ready", _ready, raising=False)
    monkeypatch.setattr("plan_lsp.core.workspace.sandbox_status", lambda: NO_SANDBOX)
    monkeypatch.setattr("plan_lsp.core.workspace.sandbox_status_nowait", lambda: NO_SANDBOX)


async def _ready() -> SandboxStatus:
    return NO_SANDBOX


class User:
    """The user behind the front-end: answers permission prompts and questions."""

    def __init__(self, permission: PermissionAnswer = "allow_once") -> None:
        self.permission = permission
        self.asked: list[PermissionRequest] = []

    async def request_permission(self, request: PermissionRequest) -> PermissionAnswer:
        self.asked.append(request)
        return self.permission

    async def ask_questions(
        self, run_id: str, questions: list[Question]
    ) -> dict[str, list[str]] | None:
        return None


class MemoryFrontEnd:
    """Everything the core tells the user, kept; questions answered from a list."""

    def __init__(self) -> None:
        self.updates: list[Update] = []
        self.shown: list[str] = []
        self.questions: list[tuple[str, list[str]]] = []
        self.answers: list[str | None] = []
        self.runs: list[tuple[str, str]] = []
        self.user = User()
        self.workspaces: Workspaces | None = None
        self.plans_changes = 0

    def update(self, update: Update) -> None:
        assert isinstance(update, UPDATE_MODELS)  # the contract's values, never plain JSON
        self.updates.append(update)

    def run_began(self, run_id: str, kind: str) -> None:
        self.runs.append((run_id, kind))

    def run_ended(self, run_id: str, stop_reason: str) -> None:
        self.runs.append((run_id, stop_reason))

    def show(self, message: str, *, warning: bool = False) -> None:
        self.shown.append(message)

    async def ask(self, message: str, options: list[str], *, warning: bool = False) -> str | None:
        self.questions.append((message, options))
        return self.answers.pop(0) if self.answers else None

    def buffer_text(self, path: Path) -> str | None:
        return None

    async def save_buffer(self, path: Path) -> bool:
        return False

    async def edit_and_save(self, path: Path, text: str, label: str) -> BufferEdit:
        return BufferEdit(False, reason="no buffers")

    def write_file(self, path: Path, text: str) -> None:
        assert self.workspaces is not None
        self.workspaces.write_file(path, text)

    def plans_changed(self) -> None:
        self.plans_changes += 1

    def agent_ports(self, notify: Notify) -> AgentPortsFor:
        return AgentPortsFor(editor=NoEditor(), user=self.user, drafts=DraftProgress(notify))

    def kinds(self) -> list[str]:
        return [u.kind for u in self.updates]


def _core(tmp_path: Path, turns: list[dict[str, Any]]) -> tuple[Any, MemoryFrontEnd]:
    root = tmp_path / "project"
    root.mkdir()
    (root / "hello.py").write_text("print('hi')\n")
    script = _script(tmp_path / "script.json", turns)
    frontend = MemoryFrontEnd()
    workspaces = Workspaces(
        frontend, {"provider": "scripted", "script": script, "plan_shell": "classified"}
    )
    frontend.workspaces = workspaces
    workspaces.set_roots([root])
    return workspaces.get(), frontend


async def _finished(core: Any) -> None:
    """Wait for the run the workflow started (approval, rejection with feedback)."""
    current = core.runs.current
    if current is not None and current.task is not None:
        await current.task


async def test_plan_approve_do_through_the_core(tmp_path: Path) -> None:
    core, frontend = _core(tmp_path, plan_then_do_turns())
    answer = await workflow.prompt(core, "Make the greeting polite")
    assert answer.stopReason == "plan_submitted"
    # In plan mode nothing changed: the model's write and edit were refused.
    assert (core.root / "hello.py").read_text() == "print('hi')\n"
    assert "blocked" in frontend.kinds()
    state = core.state()
    assert (state.mode, state.planStatus) == ("plan", "submitted")
    plan_path = core.session.main_plan_path
    assert plan_path.read_text() == PLAN_TEXT

    state = await workflow.approve(
        core, sha256=sha256_text(PLAN_TEXT), permission_mode=PermissionMode.AUTO_EDIT
    )
    assert state.planStatus == "approved"
    assert state.approvedPlan is not None
    assert state.approvedPlan.sha256 == sha256_text(PLAN_TEXT)
    await _finished(core)
    assert (core.root / "hello.py").read_text() == "print('hello, world')\n"
    # After the Do run: the `after_do` mode, and the permission mode from before approval.
    assert (core.state().mode, core.state().permissionMode) == ("plan", "ask")
    done = [u for u in frontend.updates if isinstance(u, DoneUpdate)]
    assert [d.stopReason for d in done] == ["plan_submitted", "end_turn"]
    assert done[-1].touched == ["hello.py"]
    # Every run began and ended through the front-end; the history holds what it was told.
    assert [kind for _, kind in frontend.runs] == ["prompt", "plan_submitted", "do", "end_turn"]
    assert next(u.kind for u in core.runs.history()) == "prompt"


async def test_approval_of_a_changed_plan_is_refused(tmp_path: Path) -> None:
    core, _ = _core(tmp_path, plan_then_do_turns())
    await workflow.prompt(core, "plan it")
    with pytest.raises(Refused, match="changed since you saw it"):
        await workflow.approve(core, sha256=sha256_text("another plan"))
    assert core.state().planStatus == "submitted"


async def test_a_plan_named_by_uri_must_be_the_submitted_one(tmp_path: Path) -> None:
    core, _ = _core(tmp_path, plan_then_do_turns())
    await workflow.prompt(core, "plan it")
    other = (core.plans_dir / "OTHER.md").as_uri()
    with pytest.raises(Refused, match="the plan submitted for approval is"):
        await workflow.approve(core, plan_uri=other)
    named = core.session.main_plan_path.as_uri()
    state = await workflow.approve(core, plan_uri=named, execute=False)
    assert state.planStatus == "approved"


async def test_nothing_to_approve_before_a_plan(tmp_path: Path) -> None:
    core, _ = _core(tmp_path, [])
    with pytest.raises(Refused, match="no plan yet"):
        await workflow.approve(core)


async def test_a_second_run_is_refused_while_one_runs(tmp_path: Path) -> None:
    turns = [{"text": "thinking", "pace": {"chars_per_second": 50}}, {"text": "more"}]
    core, _ = _core(tmp_path, turns)
    handle = workflow.start_prompt(core, "first")
    with pytest.raises(Refused, match="in progress"):
        workflow.start_prompt(core, "second")
    with pytest.raises(Refused, match="in progress"):
        await workflow.approve(core)
    await core.runs.cancel(handle.run_id)
    assert handle.task is not None and (await handle.task).stop_reason == "cancelled"


async def test_reject_without_feedback_asks_and_keeps_the_plan_approvable(tmp_path: Path) -> None:
    core, frontend = _core(tmp_path, plan_then_do_turns())
    await workflow.prompt(core, "plan it")
    frontend.answers = ["Cancel"]
    state = await workflow.reject(core, confirm=True)
    assert state.planStatus == "submitted"  # the user said Cancel: nothing happened
    assert "Reject the plan without feedback?" in frontend.questions[0][0]
    frontend.answers = [workflow.REJECT_WITHOUT_FEEDBACK]
    state = await workflow.reject(core, confirm=True)
    assert state.planStatus == "rejected"
    assert core.runs.current is None  # no revision without feedback
    state = await workflow.approve(core, execute=False)
    assert state.planStatus == "approved"


async def test_reject_with_feedback_starts_the_revision(tmp_path: Path) -> None:
    revised = PLAN_TEXT + "3. Also say goodbye.\n"
    turns = [*plan_turns(), *plan_turns(revised)]
    core, frontend = _core(tmp_path, turns)
    await workflow.prompt(core, "plan it")
    state = await workflow.reject(core, "say goodbye too")
    assert state.planStatus == "rejected"
    await _finished(core)
    assert core.state().planStatus == "submitted"
    assert core.session.main_plan_path.read_text() == revised
    prompts = [u.text for u in frontend.updates if isinstance(u, PromptUpdate)]
    assert prompts == ["plan it", "Rejected the plan: say goodbye too"]


async def test_switching_to_plan_mode_is_refused_never_silently(tmp_path: Path) -> None:
    core, frontend = _core(tmp_path, [])
    state = await workflow.set_mode(core, WorkMode.BUILD)
    assert state.mode == "build" and state.cancelled == []
    state = await workflow.toggle_mode(core)
    assert state.mode == "plan"
    changes = [u for u in frontend.updates if isinstance(u, ModeChangedUpdate)]
    assert [c.mode for c in changes] == ["build", "plan"]


async def test_compact_on_a_short_conversation_says_so(tmp_path: Path) -> None:
    core, frontend = _core(tmp_path, [])
    await workflow.compact(core)
    assert frontend.shown == ["Nothing to compact yet: the conversation is short."]


async def test_cancelling_the_prompt_request_stops_its_run(tmp_path: Path) -> None:
    turns = [{"text": "x" * 400, "pace": {"chars_per_second": 20}}]
    core, _ = _core(tmp_path, turns)
    request = asyncio.ensure_future(workflow.prompt(core, "go"))
    while core.runs.current is None:
        await asyncio.sleep(0)
    handle = core.runs.current
    request.cancel()
    with pytest.raises(asyncio.CancelledError):
        await request
    assert handle.task is not None and handle.task.done()
    assert core.runs.current is None


async def test_permission_prompts_and_answers_are_kept_in_the_history(tmp_path: Path) -> None:
    core, frontend = _core(tmp_path, plan_then_do_turns())
    frontend.user.permission = "reject_once"
    await workflow.prompt(core, "plan it")
    await workflow.approve(core, permission_mode=PermissionMode.ASK)
    await _finished(core)
    assert (core.root / "hello.py").read_text() == "print('hi')\n"  # the user said no
    asked = [u for u in core.runs.history() if isinstance(u, PermissionUpdate)]
    assert [(u.tool, u.decision) for u in asked] == [
        ("edit_file", None),
        ("edit_file", "reject_once"),
    ]
    assert [r.tool for r in frontend.user.asked] == ["edit_file"]


async def test_a_long_observation_says_how_much_the_update_left_out(tmp_path: Path) -> None:
    """The client gets an observation's first 4,000 characters and how many more the model
    read, so a cut-off result is never shown as if it were whole."""
    core, frontend = _core(
        tmp_path, [calls(call("read_file", path="big.txt")), {"text": "read it"}]
    )
    (core.root / "big.txt").write_text("x" * 9000 + "\n")
    await workflow.prompt(core, "read big.txt")
    long = next(u for u in frontend.updates if isinstance(u, ToolResultUpdate))
    assert len(long.content) == 4000
    assert long.omitted > 5000
    (tmp_path / "short").mkdir()
    short_core, short_frontend = _core(
        tmp_path / "short", [calls(call("read_file", path="hello.py")), {"text": "ok"}]
    )
    await workflow.prompt(short_core, "read hello.py")
    short = next(u for u in short_frontend.updates if isinstance(u, ToolResultUpdate))
    assert short.omitted == 0 and "hi" in short.content
