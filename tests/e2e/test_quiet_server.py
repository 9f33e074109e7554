"""The server stays quiet where nothing went wrong, through the real server: a refused
request is one line at INFO in the log (no traceback at ERROR), and the server's own folder
never shows as a change in the project's version control — at the first start, or after a
plan and its revisions — only the plan itself does."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from tests.e2e.scripts import sample_project, scripted_args, write_script
from tests.lsp_harness import running_server
from tests.needs import need_program

PLAN = "# Plan\n\n1. Change the greeting in `hello.py`.\n"
REVISED = "# Plan v2\n\n1. Change `hello.py` only.\n"


def plan_turns(plan: str) -> list[dict[str, object]]:
    return [
        {"tool_calls": [{"name": "plan_write", "arguments": {"content": plan}}]},
        {"tool_calls": [{"name": "exit_plan_mode", "arguments": {}}]},
    ]


async def test_refusals_are_one_line_at_info(tmp_path: Path) -> None:
    ws = sample_project(tmp_path / "ws")
    script = write_script(tmp_path / "s.json", [])
    log = tmp_path / "server.log"
    args = [*scripted_args(script), "--log-file", str(log), "--log-level", "info"]
    async with running_server([ws], *args) as ed:
        for method, params in (
            ("planLsp/approvePlan", {"force": True}),
            ("planLsp/rejectPlan", {"feedback": "no"}),
            ("planLsp/newSession", {"workspaceUri": ws.as_uri() + "-elsewhere"}),
        ):
            with pytest.raises(JsonRpcException):
                await ed.request(method, params)
        with pytest.raises(JsonRpcException):
            await ed.command("planLsp.approvePlan", {"force": True})
        await ed.state()
    text = log.read_text()
    assert text.count("refused: cannot approve") == 2, text
    assert "refused: cannot reject" in text
    assert "Traceback" not in text, text
    refusals = [line for line in text.splitlines() if "cannot approve" in line]
    assert refusals and all(" INFO " in line for line in refusals), refusals
    # Bad input is still an error worth a line (the request named no open folder).
    assert "not an open workspace folder" in text


def git(ws: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ws, check=True, capture_output=True, text=True
    ).stdout


async def test_the_server_folder_never_shows_as_a_change(tmp_path: Path) -> None:
    need_program("git")
    ws = sample_project(tmp_path / "ws")
    git(ws, "init", "-q")
    git(ws, "add", ".")
    git(ws, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "start")
    script = write_script(tmp_path / "s.json", plan_turns(PLAN) + plan_turns(REVISED))
    async with running_server([ws], *scripted_args(script)) as ed:
        await ed.settled_state()
        assert git(ws, "status", "--porcelain", "--untracked-files=all") == ""
        await ed.request("planLsp/prompt", {"text": "plan it"})
        await ed.request("planLsp/rejectPlan", {"feedback": "smaller"})
        await ed.wait_update(lambda u: u["kind"] == "done" and len(ed.updates_of("done")) >= 2)
        revisions = await ed.request("planLsp/planRevisions", {})
        assert Path(revisions["previousUri"][len("file://") :]).exists()
        status = git(ws, "status", "--porcelain", "--untracked-files=all").splitlines()
        assert status == ["?? .plan-lsp/plans/PLAN.md"], status
