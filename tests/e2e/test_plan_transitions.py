"""Every plan status and every user action, through the real server: from each state the
plan's code lens shows a way forward, and Approve / Reject / Revise act the same whether
they come from the lens, a `planLsp/*` request or the command VS Code's palette sends.

States: none, drafting (a draft the model left unsubmitted), submitted, approved (saved,
not yet carried out), rejected (without feedback). Actions: approve, reject with feedback,
reject without feedback (each from the lens, the request and the palette command), a new
prompt, a new draft typed by the user, a mode switch.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.e2e.scripts import scripted_session
from tests.lsp_harness import Editor

pytestmark = pytest.mark.slow

PLAN = "# Plan\n\n1. Change the greeting in `hello.py`.\n2. Nothing else changes.\n"
REVISED = "# Plan v2\n\n1. Change `hello.py` only.\n2. Say when it is done.\n"
FEEDBACK = "only hello.py, please"
APPROVE = "planLsp.approvePlan"
REJECT = "planLsp.rejectPlan"
CONFIRM_TITLE = "Reject without feedback"

STATES = ("none", "drafting", "submitted", "approved", "rejected")
VIAS = ("lens", "request", "palette")


def plan_turns(plan: str) -> list[dict[str, Any]]:
    return [
        {"tool_calls": [{"name": "plan_write", "arguments": {"content": plan}}]},
        {"tool_calls": [{"name": "exit_plan_mode", "arguments": {}}]},
    ]


SETUP_TURNS: dict[str, list[dict[str, Any]]] = {
    "none": [],
    "drafting": [
        {"tool_calls": [{"name": "plan_write", "arguments": {"content": PLAN}}]},
        {"text": "A first draft; more tomorrow."},
    ],
    "submitted": plan_turns(PLAN),
    "approved": plan_turns(PLAN),
    "rejected": plan_turns(PLAN),
}
DO_TURNS = [{"text": "Done: the greeting is changed."}]

# (state, action) → the plan status afterwards, or None: refused (the lens does not offer
# it; the request and the command answer RequestFailed).
EXPECTED: dict[tuple[str, str], str | None] = {
    ("none", "approve"): None,
    ("drafting", "approve"): "approved",
    ("submitted", "approve"): "approved",
    ("approved", "approve"): "approved",  # carried out now
    ("rejected", "approve"): "approved",
    ("none", "reject_feedback"): None,
    ("drafting", "reject_feedback"): "submitted",  # revised
    ("submitted", "reject_feedback"): "submitted",
    ("approved", "reject_feedback"): None,
    ("rejected", "reject_feedback"): "submitted",  # Revise…
    ("none", "reject"): None,
    ("drafting", "reject"): "rejected",
    ("submitted", "reject"): "rejected",
    ("approved", "reject"): None,
    ("rejected", "reject"): "rejected",  # already: nothing changes, the user is told how on
    ("none", "prompt"): "submitted",
    ("drafting", "prompt"): "submitted",
    ("submitted", "prompt"): "submitted",
    ("approved", "prompt"): "approved",  # build mode: a prompt is work on the approved plan
    ("rejected", "prompt"): "submitted",
    ("none", "edit"): "none",
    ("drafting", "edit"): "drafting",
    ("submitted", "edit"): "submitted",
    ("approved", "edit"): "drafting",  # changed after approval: approve again
    ("rejected", "edit"): "rejected",
    ("none", "switch"): "none",
    ("drafting", "switch"): "drafting",
    ("submitted", "switch"): "submitted",
    ("approved", "switch"): "approved",
    ("rejected", "switch"): "rejected",
}


@dataclass(frozen=True)
class Case:
    state: str
    action: str
    via: str | None

    @property
    def expected(self) -> str | None:
        return EXPECTED[(self.state, self.action)]

    @property
    def id(self) -> str:
        return f"{self.state}-{self.action}" + (f"-{self.via}" if self.via else "")

    def turns(self) -> list[dict[str, Any]]:
        turns = list(SETUP_TURNS[self.state])
        if self.expected is None:
            return turns
        if self.action == "approve":
            turns += DO_TURNS
        elif self.action == "reject_feedback":
            turns += plan_turns(REVISED)
        elif self.action == "prompt":
            turns += DO_TURNS if self.state == "approved" else plan_turns(REVISED)
        return turns


CASES = [
    Case(state, action, via)
    for state in STATES
    for action in ("approve", "reject_feedback", "reject")
    for via in VIAS
] + [Case(state, action, None) for state in STATES for action in ("prompt", "edit", "switch")]


def plan_path(ws: Path) -> Path:
    return ws / ".plan-lsp" / "plans" / "PLAN.md"


async def lens_commands(ed: Editor, path: Path) -> list[types.Command]:
    result = await ed.client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=path.as_uri()))
    )
    return [lens.command for lens in result or [] if lens.command is not None]


async def settle(ed: Editor, mark: int) -> dict[str, Any]:
    """The state once a run the action started (if any) has ended."""
    state = await ed.state()
    if state["running"]:
        await ed.wait_update(lambda u: u["kind"] == "done", start=mark)
        state = await ed.state()
    assert not state["running"]
    return state


async def reach(ed: Editor, ws: Path, state: str) -> None:
    if state == "none":
        return
    await ed.request("planLsp/prompt", {"text": "greet politely"})
    if state == "approved":
        await ed.request("planLsp/approvePlan", {"execute": False})
    elif state == "rejected":
        await ed.request("planLsp/rejectPlan", {})
    assert (await ed.state())["planStatus"] == state


async def assert_way_forward(ed: Editor, ws: Path, state: dict[str, Any]) -> None:
    """The lens offers something to do next, and what it offers is accepted."""
    status = state["planStatus"]
    if status == "none":
        return  # nothing to decide: the next prompt asks for a plan
    path = plan_path(ws)
    if path.resolve().as_uri() not in ed.ed.buffers:
        ed.open(path)
    commands = await lens_commands(ed, path)
    titles = [c.title for c in commands]
    actionable = [c for c in commands if c.command]
    if status == "approved" and state["outcome"] == "completed":
        # The Do run's model ended without ticking a step: "done" is not claimed.
        open_steps = "steps 1 and 2 open (1 not reached; 2 not reached)"
        assert titles == [f"Plan approved ✓ — carried out partly: {open_steps}", "Run the rest"]
        return
    assert actionable, f"{status}: the lens offers nothing to do: {titles}"
    if status in ("drafting", "submitted", "rejected"):
        assert [c.title for c in actionable if c.command == APPROVE][:2] == [
            "Approve (auto-accept edits)",
            "Approve (ask before edits)",
        ]
        assert ("Revise…" if status == "rejected" else "Reject…") in titles
    if status == "approved":
        assert "Run the approved plan" in titles
    # What the lens offers first is accepted (approving without carrying out, so no run).
    first = actionable[0]
    args: dict[str, Any] = dict((first.arguments or [{}])[0] or {})
    if first.command == APPROVE:
        args["execute"] = False
    after = await ed.command(first.command, args)
    if first.command == APPROVE:
        assert after["planStatus"] == "approved"


async def act(ed: Editor, ws: Path, case: Case) -> Any:
    """Perform the case's action; None when the lens does not offer it."""
    path = plan_path(ws)
    if case.action == "prompt":
        return await ed.request("planLsp/prompt", {"text": "again, smaller"})
    if case.action == "switch":
        return await ed.request("planLsp/toggleMode", {})
    if case.action == "edit":
        text = "# My own plan\n\n1. Change `hello.py` myself.\n"
        if path.resolve().as_uri() in ed.ed.buffers:
            ed.type_into(path, (ed.buffer_text(path) or "") + "3. Also a test.\n")
        else:
            ed.open(path, text)
        return await ed.state()
    feedback = case.action == "reject_feedback"
    if case.via == "request":
        if case.action == "approve":
            return await ed.request("planLsp/approvePlan", {})
        return await ed.request("planLsp/rejectPlan", {"feedback": FEEDBACK} if feedback else {})
    if case.via == "palette":
        # What VS Code's palette commands send: the plan as the editor shows it; the
        # feedback typed into the input box (none: empty box).
        if case.action == "approve":
            text = ed.buffer_text(path) or ""
            sha = hashlib.sha256(text.encode()).hexdigest()
            return await ed.command(APPROVE, {"planUri": path.as_uri(), "sha256": sha})
        return await ed.command(REJECT, {"feedback": FEEDBACK} if feedback else {})
    # The lens: what it offers, with its own arguments; feedback is written in the plan.
    if path.resolve().as_uri() not in ed.ed.buffers:
        return None
    wanted = APPROVE if case.action == "approve" else REJECT
    offered = [c for c in await lens_commands(ed, path) if c.command == wanted]
    if not offered:
        return None
    if feedback:
        ed.type_into(path, (ed.buffer_text(path) or "") + f"\n> feedback: {FEEDBACK}\n")
        await ed.state()
    ed.ed.answer_message = lambda p: CONFIRM_TITLE if CONFIRM_TITLE in [
        a.title for a in p.actions or []
    ] else None
    return await ed.command(wanted, *(offered[0].arguments or [{}]))


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
async def test_every_plan_state_has_a_way_forward(tmp_path: Path, case: Case) -> None:
    ws, _transcript, cm = scripted_session(tmp_path, case.turns())
    async with cm as ed:
        await reach(ed, ws, case.state)
        mark = len(ed.ed.updates)
        try:
            result = await act(ed, ws, case)
        except JsonRpcException as exc:
            assert case.expected is None, f"refused: {exc}"
            assert "cannot" in str(exc)
            result = None
        else:
            if result is None:
                assert case.expected is None and case.via == "lens"
        state = await settle(ed, mark)
        if case.expected is None:
            assert state["planStatus"] == case.state
        else:
            assert state["planStatus"] == case.expected, state["planStatus"]
        if case.action == "reject" and case.via == "lens" and case.expected is not None:
            asked = [m.message for m in ed.ed.message_requests]
            if case.state == "rejected":
                assert not asked  # told, not asked: nothing to confirm
            else:
                assert len(asked) == 1 and "> feedback:" in asked[0]
        if case.action == "reject_feedback" and case.expected is not None:
            prompts = [u["text"] for u in ed.updates_of("prompt")]
            assert any(FEEDBACK in p for p in prompts), prompts
            assert ed.buffer_text(plan_path(ws)) == REVISED
        await assert_way_forward(ed, ws, state)
