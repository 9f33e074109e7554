"""Plans streamed at a model's pace into buffers with each editor's line model.

Vim and Neovim hold a buffer as lines and always keep a final line break (an empty file is
"\\n"; a draft that ends mid-line is shown with one); a CRLF file stays CRLF whatever an edit
carries. Through the real server and a scripted client with that line model: the plan grows
in the buffer delta by delta, the server never falls back to whole-document replacements or
disk-only writes (each fallback is logged as a document model defect), and at the end the
buffer, the disk and the approved text are the same bytes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.model_speed import (
    LONG_PLAN,
    LONG_REVISED_PLAN,
    paced_script,
    stream_report,
)
from tests.e2e.quirky_client import Quirks, QuirkyEditor, quirky_server
from tests.e2e.scripts import sample_project, scripted_args

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

# Faster than a real model so the suite stays quick, but in the same uneven pieces, with
# pauses longer than Neovim's 150 ms debounce, and cut anywhere (mid-line, mid-word).
TEST_PACE: dict[str, Any] = {
    "chars_per_second": 6000,
    "chunk": [1, 40],
    "jitter": 0.5,
    "pause_every_chars": [400, 900],
    "pause_ms": [200, 400],
    "seed": 11,
}
DEFECT = "document model defect"

NEOVIM = Quirks(line_model="lines", debounce_s=0.15, one_line_break=True, show_document="absent")
VIM_COC = Quirks(line_model="lines", one_line_break=True, client_name="coc.nvim")
VSCODE = Quirks(one_line_break=True)


def turns_for(*plans: str) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = []
    for plan in plans:
        turns += [
            {"tool_calls": [{"name": "plan_write", "arguments": {"content": plan}}]},
            {"tool_calls": [{"name": "exit_plan_mode", "arguments": {}}], "pace": None},
        ]
    return turns


class Session:
    def __init__(self, tmp_path: Path, plans: tuple[str, ...], quirks: Quirks) -> None:
        self.ws = sample_project(tmp_path / "ws")
        self.plan = self.ws / ".plan-lsp" / "plans" / "PLAN.md"
        self.timeline = tmp_path / "timeline.jsonl"
        self.script = tmp_path / "script.json"
        self.script.write_text(
            json.dumps(paced_script(turns_for(*plans), self.timeline, TEST_PACE))
        )
        self.log = tmp_path / "server.log"
        args = scripted_args(self.script, tmp_path / "t.jsonl")
        self.server = quirky_server(self.ws, quirks, *args, "--log-file", str(self.log))

    def defects(self) -> list[str]:
        return [line for line in self.log.read_text().splitlines() if DEFECT in line]

    def events(self, ed: QuirkyEditor) -> list[tuple[float, str]]:
        return ed.history.get(self.plan.resolve().as_uri(), [])


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


async def prompt_and_settle(ed: QuirkyEditor, text: str) -> None:
    result = await ed.request("planLsp/prompt", {"text": text}, timeout=60)
    assert result["stopReason"] == "plan_submitted", result
    await ed.settle()


@pytest.mark.parametrize(
    "quirks", [NEOVIM, VIM_COC, VSCODE], ids=["neovim-lines", "vim-coc-lines", "vscode-text"]
)
async def test_a_plan_and_its_revision_stream_into_an_empty_plan_file(
    tmp_path: Path, quirks: Quirks
) -> None:
    s = Session(tmp_path, (LONG_PLAN, LONG_REVISED_PLAN), quirks)
    async with s.server as ed:
        s.plan.parent.mkdir(parents=True)
        s.plan.write_text("")
        ed.open(s.plan)  # Vim and Neovim hold it as "\n"
        await prompt_and_settle(ed, "plan it")
        assert ed.text(s.plan) == LONG_PLAN
        await ed.request("planLsp/rejectPlan", {"feedback": "say nothing else changes"})
        await ed.wait_for("the revision's run to end", lambda: _run_ended(ed, 2), timeout=60)
        await ed.settle()
        buffer = ed.text(s.plan)
        assert buffer == LONG_REVISED_PLAN
        # The user adds a line just before approving; the approved text is what they see.
        assert buffer is not None
        typed = buffer + "- typed by the user before approving\n"
        ed.type_into(s.plan, typed)
        await ed.settle()
        state = await ed.request("planLsp/approvePlan", {"execute": False}, timeout=20)
        approved = state["approvedPlan"]
        assert approved["text"] == typed
        assert approved["sha256"] == sha(typed)
        if quirks.client_name == "coc.nvim":
            # coc.nvim's Vim asks about files written behind its buffers: the disk gets the
            # buffer when the user saves (`:w` writes exactly what was approved).
            s.plan.write_text(typed)
        assert s.plan.read_bytes().decode() == typed, "the disk is not what was approved"
        state = await ed.request("planLsp/state", {})
        assert state["planStatus"] == "approved"
        report = stream_report(s.events(ed), s.timeline, s.script)
    # Both plans grew in the buffer piece by piece; nothing the model sent was never shown.
    # (pauses longer than the debounce separate at least that many; a burst would show one)
    assert all(n >= 3 for n in report.growing_states.values()), report
    assert not any(report.never_shown.values()), report
    assert s.defects() == []


async def test_a_plan_without_a_final_line_break_is_held_and_approved_with_one(
    tmp_path: Path,
) -> None:
    plan = LONG_PLAN.rstrip("\n")  # the model ends its content mid-line
    s = Session(tmp_path, (plan,), NEOVIM)
    async with s.server as ed:
        await prompt_and_settle(ed, "plan it")  # PLAN.md does not exist before the draft
        await ed.wait_for("PLAN.md open", lambda: ed.text(s.plan) is not None)
        await ed.settle()
        assert ed.text(s.plan) == plan + "\n"
        state = await ed.request("planLsp/approvePlan", {"execute": False}, timeout=20)
        assert state["approvedPlan"]["text"] == plan + "\n"
        assert s.plan.read_text() == plan + "\n"
    assert s.defects() == []


@pytest.mark.parametrize("quirks", [NEOVIM, VSCODE], ids=["neovim-dos", "vscode-crlf"])
async def test_a_crlf_plan_file_stays_crlf(tmp_path: Path, quirks: Quirks) -> None:
    s = Session(tmp_path, (LONG_PLAN,), quirks)
    async with s.server as ed:
        s.plan.parent.mkdir(parents=True)
        s.plan.write_bytes(b"# Old plan\r\n\r\n1. Something else.\r\n")
        ed.open(s.plan)
        await prompt_and_settle(ed, "plan it")
        expected = LONG_PLAN.replace("\n", "\r\n")
        assert ed.text(s.plan) == expected
        state = await ed.request("planLsp/approvePlan", {"execute": False}, timeout=20)
        assert state["approvedPlan"]["text"] == expected
        assert s.plan.read_bytes() == expected.encode()
    assert s.defects() == []


async def test_a_client_that_miscounts_columns_is_a_counted_defect(tmp_path: Path) -> None:
    """lsp-mode 8 counts characters while claiming UTF-16: the server still gets the plan into
    the buffer (whole-document replacements, decided once the client's reports go quiet, not
    after the whole confirmation wait), and says so as a defect. The plan's first line is
    long and full of astral characters, and pauses split it into several edits, so an edit
    lands after them on the same line."""
    plan = "# Plan: " + "🚀 ship " * 60 + "\n\n1. Rename `launch` to `🚀launch` 🎉🎉.\n"
    s = Session(tmp_path, (plan,), Quirks(columns_in_characters=True))
    pace = {**TEST_PACE, "chunk": [5, 10], "pause_every_chars": [60, 80], "pause_ms": [200, 250]}
    s.script.write_text(json.dumps(paced_script(turns_for(plan), s.timeline, pace)))
    async with s.server as ed:
        s.plan.parent.mkdir(parents=True)
        s.plan.write_text("")
        ed.open(s.plan)
        await prompt_and_settle(ed, "plan it")
        assert ed.text(s.plan) == plan
        report = stream_report(s.events(ed), s.timeline, s.script)
    assert len(s.defects()) >= 1, s.defects()
    assert not any(report.never_shown.values()), report


def _run_ended(ed: QuirkyEditor, count: int) -> bool:
    return len(ed.updates("done")) >= count
