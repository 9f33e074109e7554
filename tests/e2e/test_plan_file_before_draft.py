"""The plan file exists before the client hears of a draft: a client that shows the plan
when the "drafting" update arrives (VS Code) or when asked by `window/showDocument` opens a
file, not a missing one — through the real server with a client that notes, as each message
arrives, whether the file is on disk."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.e2e.scripts import sample_project, scripted_args
from tests.lsp_harness import running_server

PLAN = "# Plan: greet politely\n\n1. Change the greeting in `hello.py`.\n"


class _NotingList(list[Any]):
    """A list that notes, at each append, whether `path` exists and what it holds."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.seen: list[tuple[Any, str | None]] = []

    def append(self, item: Any) -> None:
        on_disk = self.path.read_text() if self.path.is_file() else None
        self.seen.append((item, on_disk))
        super().append(item)


async def test_the_plan_file_exists_before_the_drafting_update_and_the_show(
    tmp_path: Path,
) -> None:
    ws = sample_project(tmp_path / "ws")
    plan = ws / ".plan-lsp" / "plans" / "PLAN.md"
    # The call starts, and its arguments come a second later in one delta: long enough for
    # the client to see the "drafting" update well before the draft has any text.
    turns = [
        {
            "delay_ms": 1000,
            "tool_calls": [{"name": "plan_write", "arguments": {"content": PLAN}}],
        },
        {"tool_calls": [{"name": "exit_plan_mode", "arguments": {}}]},
    ]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"chunk": 100_000, "turns": turns}))
    async with running_server([ws], *scripted_args(script)) as ed:
        updates = _NotingList(plan)
        shown = _NotingList(plan)
        ed.ed.updates = updates
        ed.ed.shown_documents = shown
        assert not plan.exists()
        result = await ed.request("planLsp/prompt", {"text": "plan it"})
        assert result["stopReason"] == "plan_submitted"
        drafting = [
            on_disk
            for update, on_disk in updates.seen
            if update.get("kind") == "planDraft" and update.get("status") == "drafting"
        ]
        assert drafting, "no drafting update"
        assert drafting[0] == "", "the first drafting update came before the (empty) plan file"
        assert shown.seen, "the plan was not shown"
        assert shown.seen[0][0].uri == plan.as_uri()
        assert shown.seen[0][1] is not None, "the plan was shown before its file existed"
        assert ed.buffer_text(plan) == PLAN
        assert plan.read_text() == PLAN
