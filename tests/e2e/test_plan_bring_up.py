"""The first plan of a workspace while the editor is slow to bring PLAN.md up.

An editor opening its first Markdown document of a window takes a while before it answers
`window/showDocument` (VS Code activates its Markdown extensions, loads the grammar and
creates the editor; on a busy machine, a second or more). The model keeps streaming
meanwhile. Through the real server and a client that answers showDocument only once the
model has streamed the whole `plan_write` call: the first edit into the buffer carries the
draft as it is when the editor is ready — the whole plan here — not the first line it had
when the bring-up began (an edit that, queued behind the editor coming up, would have shown
the user one line and left the rest one more round trip behind). That holds too when the
client opens the plan by itself on the "drafting" update before the draft has any text, as
the VS Code extension does."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from tests.e2e.model_speed import LONG_PLAN, paced_script
from tests.e2e.scripts import sample_project, scripted_args
from tests.lsp_harness import Editor, EditorState, running_server

pytestmark = [pytest.mark.e2e]


def edits_to(state: EditorState, uri: str) -> list[str]:
    """The text of each edit the server sent to `uri`, in order."""
    out: list[str] = []
    for params in state.applied_edits:
        for change in params.edit.document_changes or []:
            if isinstance(change, types.TextDocumentEdit) and change.text_document.uri == uri:
                out += [e.new_text for e in change.edits if isinstance(e, types.TextEdit)]
    return out


def answer_show_document_late(ed: Editor) -> None:
    """showDocument opens the buffer at once, but is answered only once the model has
    streamed the whole `plan_write` call (its `toolCall` update)."""
    features = ed.client.protocol.fm.features
    opens_at_once = features[types.WINDOW_SHOW_DOCUMENT]

    async def answers_late(params: types.ShowDocumentParams) -> Any:
        shown = opens_at_once(params)
        await ed.wait_update(
            lambda u: u.get("kind") == "toolCall" and u.get("tool") == "plan_write"
        )
        return shown

    features[types.WINDOW_SHOW_DOCUMENT] = answers_late


async def plan_session(
    tmp_path: Path, plan_text: str, pace: dict[str, Any], open_on_drafting: bool
) -> tuple[list[str], str | None, list[types.ShowDocumentParams]]:
    """Edits sent to PLAN.md, its final buffer text and the showDocument requests of one
    plan run (PLAN.md does not exist before it)."""
    ws = sample_project(tmp_path / "ws")
    plan = ws / ".plan-lsp" / "plans" / "PLAN.md"
    turns: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "plan_write", "arguments": {"content": plan_text}}]},
        {"tool_calls": [{"name": "exit_plan_mode", "arguments": {}}], "pace": None},
    ]
    script = tmp_path / "script.json"
    script.write_text(json.dumps(paced_script(turns, tmp_path / "timeline.jsonl", pace)))
    async with running_server([ws], *scripted_args(script)) as ed:
        answer_show_document_late(ed)

        async def open_when_drafting() -> None:
            await ed.wait_update(
                lambda u: u.get("kind") == "planDraft" and u.get("status") == "drafting"
            )
            ed.open(plan)  # the file exists (empty) before the update

        opener = asyncio.create_task(open_when_drafting()) if open_on_drafting else None
        result = await ed.request("planLsp/prompt", {"text": "plan it"}, timeout=60)
        assert result["stopReason"] == "plan_submitted", result
        if opener is not None:
            await opener
        uri = plan.resolve().as_uri()
        return edits_to(ed.ed, uri), ed.buffer_text(plan), list(ed.ed.shown_documents)


async def test_the_first_edit_carries_what_the_model_streamed_while_the_editor_came_up(
    tmp_path: Path,
) -> None:
    # Uneven pieces well apart: the first one reaches the server long before the last.
    pace = {"chars_per_second": 4000, "chunk": [1, 40], "pause_ms": [50, 150], "seed": 3}
    sent, buffer, shown = await plan_session(tmp_path, LONG_PLAN, pace, open_on_drafting=False)
    assert len(shown) == 1, shown
    assert sent, "no edit reached the plan's buffer"
    assert sent[0] == LONG_PLAN, (
        f"the first edit carried {len(sent[0])} of the plan's {len(LONG_PLAN)} characters: "
        f"{sent[0][:60]!r}"
    )
    assert buffer == LONG_PLAN


async def test_a_plan_the_client_opened_on_the_drafting_update_is_still_brought_up_first(
    tmp_path: Path,
) -> None:
    # A short plan, slow at first: the client has opened PLAN.md (on the "drafting" update)
    # before the draft has any text.
    plan_text = "# Plan\n\n1. Change `hello.py`.\n2. Nothing else.\n"
    pace = {"chars_per_second": 60, "chunk": [1, 2], "jitter": 0, "pause_ms": [0, 0]}
    sent, buffer, shown = await plan_session(tmp_path, plan_text, pace, open_on_drafting=True)
    # Shown although open: the answer says when the editor is ready for the draft.
    assert len(shown) == 1 and shown[0].take_focus is False, shown
    assert sent and sent[0] == plan_text, f"the first edit carried {sent[:1]!r}"
    assert buffer == plan_text
