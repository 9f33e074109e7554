"""A Do run reports every file it changed that the approved plan never mentions — also the
ones its subagents (`task`) wrote."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.scripts import PLAN_TEXT, sample_project, scripted_args, write_script
from tests.lsp_harness import running_server


async def test_subagent_writes_are_reported_as_deviations(tmp_path: Path) -> None:
    ws = sample_project(tmp_path / "ws")
    turns = [
        {"tool_calls": [{"name": "plan_write", "arguments": {"content": PLAN_TEXT}}]},
        {"tool_calls": [{"name": "exit_plan_mode", "arguments": {}}]},
        # Do run: the parent delegates; the subagent writes a file the plan never mentions.
        {"tool_calls": [{"name": "task", "arguments": {"prompt": "take notes"}}]},
        {
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "notes.txt", "content": "x"}}
            ]
        },
        {"text": "notes taken"},
        {
            "tool_calls": [
                {
                    "name": "edit_file",
                    "arguments": {
                        "path": "hello.py",
                        "old_text": "print('hi')",
                        "new_text": "print('hello, world')",
                    },
                }
            ]
        },
        {"text": "Done."},
    ]
    script = write_script(tmp_path / "s.json", turns)
    async with running_server([ws], *scripted_args(script, tmp_path / "t.jsonl")) as ed:
        first = await ed.request("planLsp/prompt", {"text": "greet politely"})
        assert first["stopReason"] == "plan_submitted"
        await ed.command("planLsp.approvePlan", {"permissionMode": "auto_edit"})
        done = await ed.wait_update(lambda u: u["kind"] == "done" and u["runId"] != first["runId"])
    assert (ws / "notes.txt").read_text() == "x"
    assert sorted(done["touched"]) == ["hello.py", "notes.txt"]
    assert done["deviations"] == ["notes.txt"]
