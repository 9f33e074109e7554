"""The agent's own commands see its edits, through the real server: with a client that saves
buffers only when the user does (coc.nvim: the server never writes a file behind a buffer
it holds, for Vim's W11/W12), a Do run edits an open file, then runs a command that reads
it; before the command runs, the edited buffer is on disk with its text, and the command
reads the new text. A run that runs no command leaves the file to the user's save."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.quirky_client import Quirks, quirky_server
from tests.e2e.scripts import requests_of, sample_project, scripted_args, write_script
from tests.turns import GREETING_EDIT, PLAN_TEXT, calls

VIM_COC = Quirks(line_model="lines", one_line_break=True, client_name="coc.nvim")
HELLO_AFTER = "print('hello, world')\n"
CAT = calls({"name": "bash", "arguments": {"command": "cat hello.py"}})


def turns(do_run: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        calls({"name": "plan_write", "arguments": {"content": PLAN_TEXT}}),
        calls({"name": "exit_plan_mode", "arguments": {}}),
        *do_run,
        {"text": "Done."},
    ]


@pytest.mark.parametrize("command", [True, False], ids=["command", "no-command"])
async def test_a_command_reads_the_runs_edit_of_an_open_file(tmp_path: Path, command: bool) -> None:
    ws = sample_project(tmp_path / "ws")
    hello = ws / "hello.py"
    do_run = [calls(GREETING_EDIT), CAT] if command else [calls(GREETING_EDIT)]
    script = write_script(tmp_path / "s.json", turns(do_run))
    transcript = tmp_path / "t.jsonl"
    async with quirky_server(ws, VIM_COC, *scripted_args(script, transcript)) as ed:
        ed.open(hello)
        result = await ed.request("planLsp/prompt", {"text": "be polite"})
        assert result["stopReason"] == "plan_submitted"
        await ed.settle()
        await ed.command("planLsp.approvePlan", {"permissionMode": "yolo"}, timeout=20)
        await ed.wait_for(
            "the Do run's end",
            lambda: len(ed.updates("done")) >= 2,  # the planning run's, then the Do run's
            timeout=60,
        )
        await ed.settle()
        assert ed.text(hello) == HELLO_AFTER
        # Written before the command only: without one, the user's save writes it.
        assert hello.read_text() == (HELLO_AFTER if command else "print('hi')\n")
    if command:
        observed = [
            m["content"] for m in requests_of(transcript)[-1]["messages"] if m["role"] == "tool"
        ]
        assert "hello, world" in observed[-1], observed[-1]
