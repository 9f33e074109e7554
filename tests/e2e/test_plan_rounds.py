"""Plans as history, through the real server: plan 1 is approved and carried out; the next
planning round streams its draft into PLAN-2.md while PLAN.md keeps the approved text and
a lens that says so; PLAN-2.md's lens offers the decision, and approving it approves
PLAN-2.md's text and the Do run follows it. `planLsp/plans` lists both."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from plan_lsp.protocol.results import PlansResult
from tests.e2e.scripts import requests_of, scripted_session
from tests.lsp_harness import Editor

pytestmark = pytest.mark.slow

PLAN_1 = "# Plan one\n\n1. Change the greeting in `hello.py`.\n2. Nothing else changes.\n"
PLAN_2 = "# Plan two\n\n1. Add a farewell to `hello.py`.\n2. Keep the greeting.\n"
PLAN_2B = "# Plan two, revised\n\n1. Add a farewell to `hello.py` only.\n2. Keep the greeting.\n"
APPROVE = "planLsp.approvePlan"


def plan_turns(plan: str) -> list[dict[str, Any]]:
    return [
        {"tool_calls": [{"name": "plan_write", "arguments": {"content": plan}}]},
        {"tool_calls": [{"name": "exit_plan_mode", "arguments": {}}]},
    ]


TURNS = [
    *plan_turns(PLAN_1),
    {"text": "Done: plan one carried out."},
    *plan_turns(PLAN_2),
    *plan_turns(PLAN_2B),  # revised after the user's feedback
    {"text": "Done: plan two carried out."},
]


async def lens_titles(ed: Editor, path: Path) -> list[types.Command]:
    result = await ed.client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=path.as_uri()))
    )
    return [lens.command for lens in result or [] if lens.command is not None]


async def run_to_end(ed: Editor, mark: int) -> None:
    if (await ed.state())["running"]:
        await ed.wait_update(lambda u: u["kind"] == "done", start=mark)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


async def test_a_second_round_writes_plan_2_and_keeps_the_approved_plan(tmp_path: Path) -> None:
    ws, transcript, server = scripted_session(tmp_path, TURNS)
    plans = ws / ".plan-lsp" / "plans"
    first, second = plans / "PLAN.md", plans / "PLAN-2.md"
    async with server as ed:
        await ed.request("planLsp/prompt", {"text": "greet politely"})
        assert first.read_text() == PLAN_1
        mark = len(ed.ed.updates)
        lens = next(c for c in await lens_titles(ed, first) if c.command == APPROVE)
        await ed.command(APPROVE, {**(lens.arguments or [{}])[0], "sha256": sha(PLAN_1)})
        await run_to_end(ed, mark)
        state = await ed.state()
        assert (state["planStatus"], state["outcome"]) == ("approved", "completed")

        # The second round: plan mode, a new prompt.
        await ed.request("planLsp/setMode", {"mode": "plan"})
        round_2 = len(ed.ed.updates)
        edits_before = len(ed.ed.applied_edits)
        answer = await ed.request("planLsp/prompt", {"text": "now say goodbye"})
        assert answer["stopReason"] == "plan_submitted"
        assert first.read_text() == PLAN_1  # on disk, unchanged
        assert second.read_text() == PLAN_2
        drafts = [u for u in ed.ed.updates[round_2:] if u["kind"] == "planDraft"]
        assert drafts and {u["uri"] for u in drafts} == {second.as_uri()}
        edited = {
            change.text_document.uri
            for params in ed.ed.applied_edits[edits_before:]
            for change in params.edit.document_changes or []
            if isinstance(change, types.TextDocumentEdit)
        }
        assert edited == {second.as_uri()}, edited  # the draft streamed into PLAN-2.md
        assert ed.buffer_text(second) == PLAN_2
        state = await ed.state()
        assert (state["planUri"], state["planStatus"]) == (second.as_uri(), "submitted")

        today = datetime.now(UTC).strftime("%Y-%m-%d")
        # Its Do run ended without ticking a step: "done" is not claimed, now or later.
        partly = "carried out partly: steps 1 and 2 open (1 not reached; 2 not reached)"
        assert [c.title for c in await lens_titles(ed, first)] == [
            f"Approved plan ✓ — {partly} (session of {today})"
        ]
        second_lens = await lens_titles(ed, second)
        assert [c.title for c in second_lens] == [
            "Approve (auto-accept edits)",
            "Approve (ask before edits)",
            "Approve — step by step",
            "Reject…",
        ]

        answer = await ed.request("planLsp/plans", {})
        PlansResult.model_validate(answer)  # exactly the contract's fields
        listed = answer["plans"]
        assert [(p["uri"], p["status"], p["current"]) for p in listed] == [
            (first.as_uri(), "approved", False),
            (second.as_uri(), "submitted", True),
        ]
        assert listed[0]["carriedOut"] == partly

        # A revision stays in PLAN-2.md; Compare shows PLAN-2.md's previous revision (never
        # PLAN.md's), and only where the plan has two.
        mark = len(ed.ed.updates)
        await ed.request("planLsp/rejectPlan", {"feedback": "only hello.py"})
        await run_to_end(ed, mark)
        assert second.read_text() == PLAN_2B and first.read_text() == PLAN_1
        assert not (plans / "PLAN-3.md").exists()
        second_lens = await lens_titles(ed, second)
        compare = [c for c in second_lens if c.command == "planLsp.showPreviousRevision"]
        assert [list(c.arguments or []) for c in compare] == [[{"planUri": second.as_uri()}]]
        shown = await ed.command(compare[0].command, *(compare[0].arguments or []))
        assert (shown["previous"], shown["current"]) == (PLAN_2, PLAN_2B)
        assert not any(c.command for c in await lens_titles(ed, first))

        # Approving from PLAN-2.md's lens approves PLAN-2.md's text; the Do run follows it.
        mark = len(ed.ed.updates)
        await ed.command(APPROVE, {**(second_lens[0].arguments or [{}])[0], "sha256": sha(PLAN_2B)})
        await run_to_end(ed, mark)
        state = await ed.state()
        assert state["approvedPlan"]["path"] == str(second)
        assert state["approvedPlan"]["sha256"] == sha(PLAN_2B)
        assert first.read_text() == PLAN_1
        do_request = requests_of(transcript)[-1]
        opening = [m for m in do_request["messages"] if "Approved plan" in str(m.get("content"))]
        assert opening and PLAN_2B in str(opening[-1]["content"]), do_request["messages"]
        assert PLAN_1 not in str(opening[-1]["content"])
        listed = (await ed.request("planLsp/plans", {}))["plans"]
        # The Do run ended without ticking a step of PLAN-2.md: it is not called done.
        assert [(p["uri"], p["status"], p["revisions"]) for p in listed] == [
            (first.as_uri(), "approved", 1),
            (second.as_uri(), "approved", 2),
        ]
        assert listed[1]["carriedOut"].startswith("carried out partly: steps 1 and 2 open")


async def test_a_file_written_earlier_in_the_round_says_so(tmp_path: Path) -> None:
    """The model wrote notes.md, then its plan in PLAN.md: notes.md is no earlier plan and
    offers no decision; its lens says what it is."""
    turns = [
        {
            "tool_calls": [
                {
                    "name": "plan_write",
                    "arguments": {"content": PLAN_2, "plan_filename": "notes.md"},
                }
            ]
        },
        *plan_turns(PLAN_1),
    ]
    ws, _transcript, server = scripted_session(tmp_path, turns)
    plans = ws / ".plan-lsp" / "plans"
    async with server as ed:
        await ed.request("planLsp/prompt", {"text": "greet politely"})
        assert (await ed.state())["planUri"] == (plans / "PLAN.md").as_uri()
        notes = await lens_titles(ed, plans / "notes.md")
        assert [(c.title, c.command) for c in notes] == [
            ("Also written this round — not the plan submitted (PLAN.md)", "")
        ]
        assert any(c.command == APPROVE for c in await lens_titles(ed, plans / "PLAN.md"))
