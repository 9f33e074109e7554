"""SIGKILL the server at random points of a scripted plan session — while the plan streams,
during a tool call, around the approval, during the Do run — and check on every restart that
mode, plan status, approved-plan hash, PLAN.md on disk and the event log agree.

Each chain is one workspace driven through plan → approve → do repeatedly; every restart is
both the check of the previous kill and the start of the next step, so a chain of N kills
costs N + 1 server starts."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pygls.uris import to_fs_path

from plan_lsp.session.state_home import state_root, workspace_key
from tests.e2e.scripts import sample_project, scripted_args, write_script
from tests.lsp_harness import Editor, kill_server, running_server
from tests.reliability.crash_invariants import check_database, sha256_text

KILLS_PER_CHAIN = 5
CHAINS = 10 if os.environ.get("HYPOTHESIS_PROFILE") == "nightly" else 4
STEP_TIMEOUT_S = 30.0


def plan_text(version: int) -> str:
    return (
        f"# Plan v{version}: greet politely\n\n"
        "## Steps\n"
        f"1. Rewrite `hello.py` so that it prints version {version}.\n"
        "2. Check the result with a short `sleep` in the shell.\n\n"
        "## Notes\n"
        + "".join(f"- note {n}: keep the change to `hello.py` small.\n" for n in range(12))
    )


def planning_turns(version: int) -> list[dict[str, Any]]:
    return [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "hello.py"}}]},
        {
            "delay_ms": 4,
            "tool_calls": [{"name": "plan_write", "arguments": {"content": plan_text(version)}}],
        },
        {"tool_calls": [{"name": "exit_plan_mode", "arguments": {}}]},
    ]


def do_turns(version: int) -> list[dict[str, Any]]:
    return [
        {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 0.4"}}]},
        {
            "tool_calls": [
                {
                    "name": "write_file",
                    "arguments": {"path": "hello.py", "content": f"print('v{version}')\n"},
                }
            ]
        },
        {"delay_ms": 10, "text": "Done: hello.py prints the new version." * 3},
    ]


# Where a step may be cut short, by the phase the step starts from.
PLANNING_KILLS = ["tool_call", "streaming", "submitted", "approval_sent", "approval_answered", "do"]
DO_KILLS = ["approval_sent", "approval_answered", "do_tool", "do"]


@dataclass
class Expectation:
    """What a restart must find, given what the killed server had acknowledged."""

    disk_texts: set[str | None]
    plan_file: Path  # the plan file of the state the step started from
    approved_text: str | None = None  # an approval the client saw answered
    submitted_text: str | None = None  # a prompt answered with plan_submitted
    new_text: str | None = None  # the plan this step drafts
    # the user left build mode to plan again while an earlier approval stands
    replanning_after_approval: bool = False
    plan_texts: set[str] = field(default_factory=set)


@dataclass
class Chain:
    root: Path
    seed: int
    rng: random.Random
    turns: dict[tuple[str, ...], int] = field(default_factory=dict)
    workspace: Path = field(init=False)
    script: Path = field(init=False)
    version: int = 0
    plan_texts: set[str] = field(default_factory=set)
    log: list[str] = field(default_factory=list)
    # Every plan file a restart found approved, with the text approved: kept as it was.
    approved_files: dict[Path, str] = field(default_factory=dict)

    def next_kill(self, options: list[str]) -> str:
        """Kill points rotate (so the chains together cover them all); delays are random."""
        key = tuple(options)
        turn = self.turns[key] = self.turns.get(key, 0) + 1
        return options[(turn + self.seed) % len(options)]

    def __post_init__(self) -> None:
        self.workspace = sample_project(self.root / "ws")
        self.script = self.root / "script.json"

    @staticmethod
    def plan_file(state: dict[str, Any]) -> Path:
        """The state's plan file: PLAN.md, then PLAN-2.md, … for rounds after an approval."""
        path = to_fs_path(state["planUri"])
        assert path is not None, state
        return Path(path)

    @staticmethod
    def disk_text(path: Path) -> str | None:
        return path.read_text(encoding="utf-8") if path.exists() else None

    def server(self) -> contextlib.AbstractAsyncContextManager[Editor]:
        return running_server([self.workspace], *scripted_args(self.script))


def _answer_prompts(ed: Editor) -> None:
    # Shell commands in the Do run ask (auto_edit); the user allows them.
    ed.ed.answer_message = lambda p: "Allow once"


async def _wait(ed: Editor, pred: Any) -> None:
    await ed.wait_update(pred, timeout=STEP_TIMEOUT_S)


async def _pause(chain: Chain, most_ms: int) -> None:
    await asyncio.sleep(chain.rng.uniform(0, most_ms) / 1000)


async def _approve_and_kill(chain: Chain, ed: Editor, kill: str, expect: Expectation) -> bool:
    """Approve; returns True when the kill happened here."""
    approve = asyncio.ensure_future(
        ed.command("planLsp.approvePlan", {"permissionMode": "auto_edit"}, timeout=STEP_TIMEOUT_S)
    )
    if kill == "approval_sent":
        await _pause(chain, 30)
        if approve.done():
            expect.approved_text = _approved_text(approve.result())
        await kill_server(ed)
        approve.cancel()
        return True
    state = await approve
    assert state["planStatus"] == "approved", state
    expect.approved_text = _approved_text(state)
    if kill == "approval_answered":
        await kill_server(ed)
        return True
    return False


def _approved_text(state: dict[str, Any]) -> str | None:
    approved = state.get("approvedPlan")
    return approved["text"] if approved else None


async def _kill_during_do(chain: Chain, ed: Editor, kill: str) -> None:
    if kill == "do_tool":  # the bash call is running (it sleeps 0.4 s)
        await _wait(ed, lambda u: u["kind"] == "toolCall" and u.get("tool") == "bash")
        await _pause(chain, 300)
    else:  # somewhere in the Do run: the write, or the final answer streaming
        await _wait(ed, lambda u: u["kind"] == "toolResult" and u.get("tool") == "bash")
        await _pause(chain, 250)
    await kill_server(ed)


async def step(chain: Chain, ed: Editor, state: dict[str, Any]) -> Expectation:
    """Drive the session one step further from `state` and kill the server somewhere."""
    _answer_prompts(ed)
    plan_file = chain.plan_file(state)
    expect = Expectation(disk_texts={chain.disk_text(plan_file)}, plan_file=plan_file)
    if state["planStatus"] == "submitted":
        kill = chain.next_kill(DO_KILLS)
        chain.log.append(f"approve+do, kill at {kill}")
        if not await _approve_and_kill(chain, ed, kill, expect):
            await _kill_during_do(chain, ed, kill)
        return expect

    chain.version += 1
    text = plan_text(chain.version)
    chain.plan_texts.add(text)
    # drafting creates an empty PLAN.md first when there was none
    expect.disk_texts |= {text} | ({""} if None in expect.disk_texts else set())
    kill = chain.next_kill(PLANNING_KILLS)
    chain.log.append(f"plan v{chain.version} from {state['planStatus']}, kill at {kill}")
    expect.new_text = text
    expect.replanning_after_approval = state["planStatus"] == "approved"
    if state["mode"] != "plan":
        await ed.request("planLsp/setMode", {"mode": "plan"})
    prompt = asyncio.ensure_future(
        ed.request("planLsp/prompt", {"text": f"plan v{chain.version}"}, timeout=STEP_TIMEOUT_S)
    )
    try:
        if kill == "tool_call":
            await _wait(ed, lambda u: u["kind"] == "toolResult" and u.get("tool") == "read_file")
            await _pause(chain, 20)
            await kill_server(ed)
            return expect
        if kill == "streaming":
            await _wait(ed, lambda u: u["kind"] == "planDraft" and u.get("status") == "drafting")
            await _pause(chain, 150)
            await kill_server(ed)
            return expect
        if kill == "submitted":
            await _wait(ed, lambda u: u["kind"] == "planDraft" and u.get("status") == "submitted")
            await kill_server(ed)
            return expect
        result = await prompt
        assert result["stopReason"] == "plan_submitted", result
        expect.submitted_text = text
        if not await _approve_and_kill(chain, ed, kill, expect):
            await _kill_during_do(chain, ed, kill)
        return expect
    finally:
        prompt.cancel()


def check_restart(chain: Chain, state: dict[str, Any], expect: Expectation) -> None:
    plan_file = chain.plan_file(state)
    disk = chain.disk_text(plan_file)
    # A round after an approved plan drafts into a file of its own (PLAN-2.md, …).
    allowed = expect.disk_texts if plan_file == expect.plan_file else {None, "", expect.new_text}
    assert disk in allowed, f"{plan_file.name} is torn or unexpected: {disk!r}"
    for path, text in chain.approved_files.items():
        assert chain.disk_text(path) == text, f"the approved {path.name} changed"
    status = state["planStatus"]
    approved = state.get("approvedPlan")
    if expect.approved_text is not None:
        assert status == "approved", "an approval the client saw answered was lost"
        assert approved is not None and approved["text"] == expect.approved_text
    if expect.submitted_text is not None:
        assert status in ("submitted", "approved"), f"a submitted plan was lost: {status}"
    if approved is not None:
        assert approved["sha256"] == sha256_text(approved["text"])
        assert approved["text"] in chain.plan_texts
        assert chain.disk_text(Path(approved["path"])) == approved["text"]
        chain.approved_files[Path(approved["path"])] = approved["text"]
    if status == "approved":
        assert approved is not None
        this_step = approved["text"] in {expect.new_text, expect.approved_text} - {None}
        if state["mode"] == "plan" and this_step:
            # the Do run of the plan this step drafted or approved ended before the kill:
            # the session went back to plan mode (`after_do`, plan by default)
            assert state["outcome"] == "completed", state
        elif state["mode"] == "plan":
            # the user switched to plan mode; the earlier approval stands until a new plan
            assert expect.replanning_after_approval, state
        assert disk == approved["text"]
    else:
        assert state["mode"] == "plan", state
    if status == "submitted":
        assert disk in chain.plan_texts
    assert state["running"] is False


async def run_chain(root: Path, seed: int) -> list[str]:
    chain = Chain(root, seed, random.Random(seed))
    expect: Expectation | None = None
    killed_runs = 0
    for kill_number in range(KILLS_PER_CHAIN + 1):
        async with chain.server() as ed:
            state = await ed.state()
            db = state_root() / workspace_key(chain.workspace) / "state.db"
            replay = check_database(db, state)
            killed_runs = replay.killed_runs
            if expect is not None:
                try:
                    check_restart(chain, state, expect)
                except AssertionError as exc:
                    raise AssertionError(f"{exc}\nchain (seed {seed}): {chain.log}") from None
            if kill_number == KILLS_PER_CHAIN:
                break
            # The script belongs to the process: write the turns this step will take.
            version = chain.version + (0 if state["planStatus"] == "submitted" else 1)
            turns = do_turns(version)
            if state["planStatus"] != "submitted":
                turns = planning_turns(version) + turns
            write_script(chain.script, turns)
            expect = await step(chain, ed, state)
    assert replay.restores == KILLS_PER_CHAIN
    chain.log.append(f"runs cut by a kill: {killed_runs}")
    return chain.log


@pytest.mark.parametrize("seed", range(CHAINS))
async def test_sigkill_at_random_points_keeps_state_consistent(tmp_path: Path, seed: int) -> None:
    await run_chain(tmp_path, seed)
