"""Step mode and the steps of the approved plan in the editor, through the real server.

Approved "step by step", the Do run stops after each checklist item is completed (stop
reason `step_done`), says in `SessionState.stepping` where it stopped and what the step
changed, and goes on only with `planLsp.runNextStep` / `planLsp.runRest`. The model is given
one step at a time, with the whole plan. Each step of the approved plan gets lenses (revert
to before it, show its changes, run it), a hover with its files, and *Show changes* opens a
read-only diff outside the workspace."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from plan_lsp.server.plain import to_plain
from tests.e2e.scripts import requests_of, sample_project, scripted_args, write_script
from tests.lsp_harness import Editor, running_server

PLAN = (
    "# Plan: a polite greeting\n\n"
    "1. Change the greeting in `hello.py` to `hello`.\n"
    "2. Add `notes.txt` with one line.\n"
    "3. Add a second line to `notes.txt`.\n"
)
STEPS = (
    "Change the greeting in hello.py",
    "Add notes.txt with one line",
    "Add a second line to notes.txt",
)


def todos(*statuses: str) -> dict[str, Any]:
    items = [{"content": c, "status": s} for c, s in zip(STEPS, statuses, strict=True)]
    return {"tool_calls": [{"name": "todo_write", "arguments": {"todos": items}}]}


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def todos_after(steps: tuple[str, ...], done: int, running: bool = True) -> dict[str, Any]:
    """A `todo_write` turn: the first `done` steps completed, the next in progress (when
    `running`), the rest pending."""
    items = [
        {
            "content": c,
            "status": "completed" if n <= done else "in_progress" if n == done + 1 and running
            else "pending",
        }
        for n, c in enumerate(steps, 1)
    ]  # fmt: skip
    return call("todo_write", todos=items)


EDIT = call("edit_file", path="hello.py", old_text="print('hi')", new_text="print('hello')")
TURNS: list[dict[str, Any]] = [
    call("plan_write", content=PLAN),
    call("exit_plan_mode"),
    # step 1 (the approval's run)
    todos("in_progress", "pending", "pending"),
    EDIT,
    todos("completed", "pending", "pending"),
    # step 2 (Run next step)
    todos("completed", "in_progress", "pending"),
    call("write_file", path="notes.txt", content="one\n"),
    todos("completed", "completed", "pending"),
    # the rest (Run the rest)
    todos("completed", "completed", "in_progress"),
    call("write_file", path="notes.txt", content="one\ntwo\n"),
    todos("completed", "completed", "completed"),
    {"text": "All steps done."},
]


def plan_path(ws: Path) -> Path:
    return ws / ".plan-lsp" / "plans" / "PLAN.md"


def setup(tmp_path: Path, turns: list[dict[str, Any]]) -> tuple[Path, Path, list[str]]:
    ws = sample_project(tmp_path / "ws")
    plan_path(ws).parent.mkdir(parents=True)
    plan_path(ws).write_text("")
    script = write_script(tmp_path / "script.json", turns)
    transcript = tmp_path / "t.jsonl"
    return ws, transcript, scripted_args(script, transcript)


async def lenses(ed: Editor, path: Path) -> list[tuple[int, str, Any]]:
    result = await ed.client.text_document_code_lens_async(
        types.CodeLensParams(
            text_document=types.TextDocumentIdentifier(uri=path.resolve().as_uri())
        )
    )
    out = []
    for lens in result or []:
        assert lens.command is not None
        args = to_plain(lens.command.arguments or [{}])[0]
        out.append((lens.range.start.line, lens.command.title, (lens.command.command, args)))
    return out


def step_line(n: int, plan: str = PLAN) -> int:
    return plan.splitlines().index(next(x for x in plan.splitlines() if x.startswith(f"{n}.")))


async def run_ended(ed: Editor, start: int, reason: str) -> dict[str, Any]:
    return await ed.wait_update(
        lambda u: u["kind"] == "done" and u["stopReason"] == reason, start=start
    )


def user_text(request: dict[str, Any], containing: str) -> str:
    """The request's last user message that holds `containing` ("" when none does)."""
    users = [str(m["content"]) for m in request["messages"] if m["role"] == "user"]
    return next((text for text in reversed(users) if containing in text), "")


async def test_step_mode_runs_one_step_at_a_time(tmp_path: Path) -> None:
    ws, transcript, args = setup(tmp_path, TURNS)
    path = plan_path(ws)
    async with running_server([ws], *args) as ed:
        ed.open(path)
        assert (await ed.request("planLsp/prompt", {"text": "be polite"}))[
            "stopReason"
        ] == "plan_submitted"
        approve = [c for _, t, c in await lenses(ed, path) if t == "Approve — step by step"]
        assert approve and approve[0][1]["doMode"] == "stepwise"
        mark = len(ed.ed.updates)
        await ed.command(approve[0][0], {**approve[0][1], "permissionMode": "auto_edit"})
        await run_ended(ed, mark, "step_done")
        state = await ed.state()
        assert not state["running"] and state["planStatus"] == "approved"
        stepping = state["stepping"]
        assert stepping["doMode"] == "stepwise"
        assert (stepping["pausedAfterStep"], stepping["nextStep"], stepping["steps"]) == (1, 2, 3)
        assert stepping["summary"].startswith("Paused after step 1 of 3: hello.py (+1 -1). ")
        assert (ws / "hello.py").read_text() == "print('hello')\n"
        assert not (ws / "notes.txt").exists()
        requests = requests_of(transcript)
        assert len(requests) == 5  # planning 2, step 1: 3 — none after the step's end
        opening = user_text(requests[2], "Execute the approved plan")
        assert "Now step 1 of 3: Change the greeting" in opening and PLAN.strip() in opening

        # Lenses on the steps: step 1 ran (revert, show changes); step 2 and 3 can be run.
        found = await lenses(ed, path)
        on = {n: [t for line, t, _ in found if line == step_line(n)] for n in (1, 2, 3)}
        assert on[1] == ["Revert to before this step", "Show changes of this step"], found
        assert on[2] == ["Run this step"] and on[3] == ["Run this step"], found
        top = [t for line, t, _ in found if line == 0]
        assert "Run next step" in top and "Run the rest" in top, found

        # Run next step: the model is given step 2 only.
        mark = len(ed.ed.updates)
        await ed.command("planLsp.runNextStep", {})
        await run_ended(ed, mark, "step_done")
        assert (ws / "notes.txt").read_text() == "one\n"
        requests = requests_of(transcript)
        assert len(requests) == 8
        assert user_text(requests[5], "Carry out step 2 of the approved plan")
        assert not user_text(requests[5], "Carry out step 3")
        stepping = (await ed.state())["stepping"]
        assert (stepping["pausedAfterStep"], stepping["nextStep"]) == (2, 3)
        assert stepping["summary"].startswith("Paused after step 2 of 3: notes.txt (+1 -0). ")

        # Run the rest: no more stops; the plan is done.
        mark = len(ed.ed.updates)
        await ed.command("planLsp.runRest", {})
        await run_ended(ed, mark, "end_turn")
        assert (ws / "notes.txt").read_text() == "one\ntwo\n"
        state = await ed.state()
        assert state["stepping"]["nextStep"] is None
        assert state["outcome"] == "completed"


async def test_show_changes_is_a_read_only_file_outside_the_workspace(tmp_path: Path) -> None:
    ws, _, args = setup(tmp_path, TURNS[:5])
    path = plan_path(ws)
    async with running_server([ws], *args) as ed:
        ed.open(path)
        await ed.request("planLsp/prompt", {"text": "be polite"})
        mark = len(ed.ed.updates)
        await ed.command(
            "planLsp.approvePlan", {"doMode": "stepwise", "permissionMode": "auto_edit"}
        )
        await run_ended(ed, mark, "step_done")
        result = await ed.command("planLsp.showStepChanges", {"step": 1})
        assert result["shown"] is True
        assert [f["path"] for f in result["files"]] == ["hello.py"]
        shown = Path(to_fs_path(ed.ed.shown_documents[-1].uri) or "")
        assert shown == Path(to_fs_path(result["uri"]) or "")
        assert ws.resolve() not in shown.resolve().parents
        assert stat.S_IMODE(os.stat(shown).st_mode) == 0o444
        diff = shown.read_text()
        assert "-print('hi')" in diff and "+print('hello')" in diff
        # Hover on step 1 lists its file; on step 2 it says it has not run.
        hover = await ed.client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=path.resolve().as_uri()),
                position=types.Position(step_line(1), 3),
            )
        )
        assert hover is not None and "`hello.py` (modified, +1 -1)" in str(hover.contents)
        # Step 2 never ran: no changes to show, said why.
        refused = None
        try:
            await ed.command("planLsp.showStepChanges", {"step": 2})
        except Exception as exc:  # the server's refusal
            refused = str(exc)
        assert refused is not None and "step 2" in refused


async def test_revert_from_the_lens_restores_the_step_and_the_buffers(tmp_path: Path) -> None:
    ws, _, args = setup(tmp_path, TURNS[:8])
    path = plan_path(ws)
    async with running_server([ws], *args) as ed:
        ed.open(path)
        ed.open(ws / "hello.py")
        await ed.request("planLsp/prompt", {"text": "be polite"})
        mark = len(ed.ed.updates)
        await ed.command(
            "planLsp.approvePlan", {"doMode": "stepwise", "permissionMode": "auto_edit"}
        )
        await run_ended(ed, mark, "step_done")
        mark = len(ed.ed.updates)
        await ed.command("planLsp.runNextStep", {})
        await run_ended(ed, mark, "step_done")
        revert = [c for line, t, c in await lenses(ed, path) if line == step_line(2) and
                  t == "Revert to before this step"]  # fmt: skip
        assert revert, await lenses(ed, path)
        # The same step commands are code actions on the step's line (coc.nvim shows no
        # lenses by default), and only there.
        at = types.Position(line=step_line(2), character=0)
        actions = await ed.client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=path.resolve().as_uri()),
                range=types.Range(start=at, end=at),
                context=types.CodeActionContext(diagnostics=[]),
            )
        )
        # (this client decodes a code action that carries a command loosely: its text is
        # all that is compared)
        steps = {a.title: str(a) for a in actions or []}
        assert "Show changes of this step" in steps, steps
        assert revert[0][1]["checkpointId"] in steps["Revert to before this step"], steps
        result = await ed.command(*revert[0])
        assert result["stepsReverted"] == [2], result
        assert not (ws / "notes.txt").exists()
        assert (ws / "hello.py").read_text() == "print('hello')\n"
        stepping = (await ed.state())["stepping"]
        assert (stepping["pausedAfterStep"], stepping["nextStep"]) == (1, 2), stepping
        for buf in ed.ed.buffers.values():
            fs = Path(to_fs_path(buf.uri) or "")
            assert buf.text == fs.read_text(), fs


async def test_a_prompt_while_paused_keeps_the_pause(tmp_path: Path) -> None:
    """A prompt while paused is an ordinary run: it does not stop at a step, and the run
    stays paused before the next open step."""
    turns = [*TURNS[:5], {"text": "I changed the greeting in hello.py."}]
    ws, _transcript, args = setup(tmp_path, turns)
    async with running_server([ws], *args) as ed:
        ed.open(plan_path(ws))
        await ed.request("planLsp/prompt", {"text": "be polite"})
        mark = len(ed.ed.updates)
        await ed.command(
            "planLsp.approvePlan", {"doMode": "stepwise", "permissionMode": "auto_edit"}
        )
        await run_ended(ed, mark, "step_done")
        answer = await ed.request("planLsp/prompt", {"text": "what did you change?"})
        assert answer["stopReason"] == "end_turn"
        state = await ed.state()
        assert state["stepping"]["nextStep"] == 2 and state["stepping"]["pausedAfterStep"] == 1
        assert state["planStatus"] == "approved"
