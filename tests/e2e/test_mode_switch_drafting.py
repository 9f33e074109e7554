"""A switch to build while a plan is being written asks first, through the real server:
`window/showMessageRequest` "A plan is being written: …" with Keep planning / Stop and
switch to build. Keep (or a dismissed question) keeps planning and says so; Stop ends the
planning run and keeps the half-written plan, in the buffer and on disk, as a draft — never
a rejection. The client's toggle (`planLsp/toggleMode`, the `planLsp.toggleMode` command)
and `planLsp/setMode` ask alike."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from plan_lsp.core.mode_switch import KEEP_PLANNING, STOP_AND_BUILD, ask_within
from tests.e2e.scripts import sample_project, scripted_args, write_script
from tests.lsp_harness import Editor, running_server

PLAN = "# Plan: a polite greeting\n\n" + "".join(
    f"{n}. Step {n}: change line {n} of `hello.py` politely.\n" for n in range(1, 30)
)


def plan_turns() -> list[dict[str, Any]]:
    """A plan that streams for seconds (8 characters every 50 ms), then its submission."""
    return [
        {
            "tool_calls": [{"name": "plan_write", "arguments": {"content": PLAN}}],
            "delay_ms": 50,
        },
        {"tool_calls": [{"name": "exit_plan_mode", "arguments": {}}]},
        {"text": "Submitted."},
    ]


def plan_file(ws: Path) -> Path:
    return ws / ".plan-lsp" / "plans" / "PLAN.md"


async def switch(ed: Editor, how: str) -> dict[str, Any]:
    if how == "setMode":
        answer: dict[str, Any] = await ed.request("planLsp/setMode", {"mode": "build"})
    elif how == "toggleMode":
        answer = await ed.request("planLsp/toggleMode", {})
    else:
        answer = await ed.command("planLsp.toggleMode")
    return answer


@asynccontextmanager
async def drafting(
    tmp_path: Path, answer: str | None
) -> AsyncIterator[tuple[Editor, Path, asyncio.Future[Any]]]:
    """A plan streaming into its open buffer (past 40 characters), the user's answer to the
    question a mode switch asks set to `answer`: the editor, the plan file, the prompt's run."""
    ws = sample_project(tmp_path / "ws")
    path = plan_file(ws)
    path.parent.mkdir(parents=True)
    path.write_text("")
    script = write_script(tmp_path / "s.json", plan_turns(), chunk=8)
    async with running_server([ws], *scripted_args(script, tmp_path / "t.jsonl")) as ed:
        ed.open(path)
        ed.ed.answer_message = lambda p: answer
        run = asyncio.ensure_future(ed.request("planLsp/prompt", {"text": "plan it"}))
        await ed.wait_update(lambda u: u["kind"] == "planDraft" and u.get("chars", 0) > 40)
        yield ed, path, run


@pytest.mark.parametrize("how", ["setMode", "toggleMode", "command"])
async def test_stop_keeps_the_half_written_plan_as_a_draft(tmp_path: Path, how: str) -> None:
    async with drafting(tmp_path, STOP_AND_BUILD) as (ed, path, run):
        answer = await switch(ed, how)
        [asked] = ed.ed.message_requests
        assert asked.message.startswith("A plan is being written")
        assert [a.title for a in asked.actions or []] == [KEEP_PLANNING, STOP_AND_BUILD]
        assert answer["mode"] == "build" and answer["planStatus"] == "drafting", answer
        result = await asyncio.wait_for(run, 30)
        assert result["stopReason"] != "plan_submitted", result
        state = await ed.state()
        assert (state["mode"], state["planStatus"], state["running"]) == (
            "build",
            "drafting",
            False,
        )
        # The half-written plan is kept, in the buffer and on disk: a part of the plan (its
        # last line ended).
        kept = ed.buffer_text(path)
        assert kept and kept.strip() and PLAN.startswith(kept.rstrip("\n")), kept
        assert len(kept) < len(PLAN), kept
        assert path.read_text() == kept


@pytest.mark.parametrize("answer", [KEEP_PLANNING, None], ids=["keep", "dismissed"])
async def test_keep_planning_lets_the_plan_finish(tmp_path: Path, answer: str | None) -> None:
    async with drafting(tmp_path, answer) as (ed, path, run):
        switched = await ed.request("planLsp/setMode", {"mode": "build"})
        assert len(ed.ed.message_requests) == 1
        assert switched["mode"] == "plan", switched
        result = await asyncio.wait_for(run, 60)
        assert result["stopReason"] == "plan_submitted", result
        state = await ed.state()
        assert (state["mode"], state["planStatus"]) == ("plan", "submitted")
        assert ed.buffer_text(path) == path.read_text() == PLAN


async def test_no_run_no_question(tmp_path: Path) -> None:
    ws = sample_project(tmp_path / "ws")
    script = write_script(tmp_path / "s.json", [{"text": "hi"}])
    async with running_server([ws], *scripted_args(script)) as ed:
        assert (await ed.request("planLsp/toggleMode", {}))["mode"] == "build"
        assert (await ed.request("planLsp/toggleMode", {}))["mode"] == "plan"
        assert ed.ed.message_requests == []


class _Silent:
    """A front-end whose user never answers."""

    async def ask(self, message: str, options: list[str], *, warning: bool = False) -> None:
        await asyncio.Event().wait()


async def test_an_unanswered_question_times_out() -> None:
    answer, in_time = await ask_within(_Silent(), "?", ["a"], 0.05)  # type: ignore[arg-type]
    assert (answer, in_time) == (None, False)
