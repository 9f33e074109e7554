"""The first plan of a workspace while the editor is slow to bring PLAN.md up.

An editor opening its first Markdown document of a window takes a while before it answers
`window/showDocument` (VS Code activates its Markdown extensions and loads the grammar; on a
busy machine, a second or more). The model keeps streaming meanwhile. Through the real server
and a client that opens the buffer at once but answers showDocument only once the model has
streamed the whole `plan_write` call: the first edit into the buffer carries the draft as it
is when the editor is ready — the whole plan here — not the first line it had when the
bring-up began (which cost the user one more round trip of an editor still busy)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from tests.e2e.model_speed import LONG_PLAN, paced_script
from tests.e2e.scripts import sample_project, scripted_args
from tests.lsp_harness import running_server

pytestmark = [pytest.mark.e2e]

# Uneven pieces well apart: the first one reaches the server long before the last.
PACE: dict[str, Any] = {
    "chars_per_second": 4000,
    "chunk": [1, 40],
    "jitter": 0.5,
    "pause_every_chars": [300, 700],
    "pause_ms": [50, 150],
    "seed": 3,
}


def edits_to(ed_state: Any, uri: str) -> list[str]:
    """The text of each edit the server sent to `uri`, in order."""
    out: list[str] = []
    for params in ed_state.applied_edits:
        for change in params.edit.document_changes or []:
            if isinstance(change, types.TextDocumentEdit) and change.text_document.uri == uri:
                out += [e.new_text for e in change.edits if isinstance(e, types.TextEdit)]
    return out


async def test_the_first_edit_carries_what_the_model_streamed_while_the_editor_came_up(
    tmp_path: Path,
) -> None:
    ws = sample_project(tmp_path / "ws")
    plan = ws / ".plan-lsp" / "plans" / "PLAN.md"  # does not exist before the draft
    turns: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "plan_write", "arguments": {"content": LONG_PLAN}}]},
        {"tool_calls": [{"name": "exit_plan_mode", "arguments": {}}], "pace": None},
    ]
    script = tmp_path / "script.json"
    script.write_text(json.dumps(paced_script(turns, tmp_path / "timeline.jsonl", PACE)))
    async with running_server([ws], *scripted_args(script)) as ed:
        features = ed.client.protocol.fm.features
        opens_at_once = features[types.WINDOW_SHOW_DOCUMENT]

        async def answers_late(params: types.ShowDocumentParams) -> Any:
            shown = opens_at_once(params)  # the buffer opens (didOpen) right away
            await ed.wait_update(
                lambda u: u.get("kind") == "toolCall" and u.get("tool") == "plan_write"
            )  # the model has streamed the whole call
            return shown

        features[types.WINDOW_SHOW_DOCUMENT] = answers_late
        result = await ed.request("planLsp/prompt", {"text": "plan it"}, timeout=60)
        assert result["stopReason"] == "plan_submitted", result
        uri = plan.resolve().as_uri()
        assert ed.ed.shown_documents and ed.ed.shown_documents[0].uri == uri
        sent = edits_to(ed.ed, uri)
        assert sent, "no edit reached the plan's buffer"
        assert sent[0] == LONG_PLAN, (
            f"the first edit carried {len(sent[0])} of the plan's {len(LONG_PLAN)} characters: "
            f"{sent[0][:60]!r}"
        )
        assert ed.buffer_text(plan) == LONG_PLAN
