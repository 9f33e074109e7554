"""The Do run's last checklist state reaches the buffer and the disk before the run reports
done — for every kind of client, through the real server.

The model marks the plan's steps with `todo_write` as it works (in progress, then
completed), and its last `todo_write`, right before its final text, completes every step.
What the editor's PLAN.md buffer and the file hold is taken inside the client's handler of
the message that tells it the run ended: the `planLsp/update` `done` (clients that render
updates), the `window/logMessage` line "run finished" (clients that do not, like both Emacs
clients), and the answer to `planLsp/prompt` (a build-mode run the user asked for). Both
must hold the full checklist then. Clients: the plain test editor (edits applied and
reported at once), Neovim's 150 ms debounce, eglot 1.9 (0.5 s idle before didChange, no
window capabilities, a read left stranded behind an answer) and lsp-mode 8 (named "emacs",
columns in characters, version 0, reads lost behind an answer)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from plan_lsp.plan.checklist import mirror_todos
from plan_lsp.server.plain import to_plain
from tests.e2e.quirky_client import Quirks, QuirkyEditor, quirky_server
from tests.e2e.scripts import sample_project, scripted_args, write_script
from tests.lsp_harness import running_server

PLAN = (
    "# Plan: a polite greeting\n\n"
    "1. Change the greeting in `hello.py` to `hello, world` 🎉.\n"
    "2. Add a docstring to `hello.py`.\n"
    "3. Keep every other file as it is.\n\n"
    "## Notes\n\n- One file changes.\n"
)
STEPS = (
    "Change the greeting in hello.py",
    "Add a docstring to hello.py",
    "Keep every other file as it is",
)
DONE_PLAN = mirror_todos(PLAN, [(step, "completed") for step in STEPS])
EDIT = {
    "name": "edit_file",
    "arguments": {"path": "hello.py", "old_text": "print('hi')", "new_text": "print('hello')"},
}

QUIRKS = {
    "neovim": Quirks(debounce_s=0.15),
    "eglot": Quirks(
        debounce_s=0.5, window=False, show_document="absent", plan_lsp=False, after_answer="strand"
    ),
    "lsp-mode": Quirks(
        client_name="emacs",
        columns_in_characters=True,
        versions="zero",
        show_document="absent",
        plan_lsp=False,
        after_answer="drop",
    ),
}


def todos(*statuses: str) -> dict[str, Any]:
    items = [{"content": c, "status": s} for c, s in zip(STEPS, statuses, strict=True)]
    return {"name": "todo_write", "arguments": {"todos": items}}


def plan_turns() -> list[dict[str, Any]]:
    return [
        {"tool_calls": [{"name": "plan_write", "arguments": {"content": PLAN}}]},
        {"tool_calls": [{"name": "exit_plan_mode", "arguments": {}}]},
    ]


def work_turns() -> list[dict[str, Any]]:
    """Marks as it goes; the last todo_write completes every step right before the text."""
    return [
        {"tool_calls": [todos("in_progress", "pending", "pending")]},
        {"tool_calls": [EDIT]},
        {"tool_calls": [todos("completed", "in_progress", "pending")]},
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "hello.py"}}]},
        {"tool_calls": [todos("completed", "completed", "in_progress")]},
        {"tool_calls": [todos("completed", "completed", "completed")]},
        {"text": "Done."},
    ]


def plan_path(ws: Path) -> Path:
    return ws / ".plan-lsp" / "plans" / "PLAN.md"


class AtRunEnd(list[Any]):
    """A client's record of received messages that also takes, in the very handler of a
    message saying the run ended, what the buffer and the file hold."""

    def __init__(self, is_end: Callable[[Any], bool], take: Callable[[], dict[str, Any]]):
        super().__init__()
        self.is_end = is_end
        self.take = take
        self.seen: list[dict[str, Any]] = []

    def append(self, item: Any) -> None:
        super().append(item)
        if self.is_end(item):
            self.seen.append(self.take())


def disk(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.exists() else None


def assert_full_checklist(seen: dict[str, Any], what: str) -> None:
    for key in ("buffer", "disk"):
        assert seen[key] == DONE_PLAN, (
            f"{key} when the client saw {what}:\nexpected {DONE_PLAN!r}\nactual   {seen[key]!r}"
        )


def session(tmp_path: Path, turns: list[dict[str, Any]]) -> tuple[Path, list[str]]:
    ws = sample_project(tmp_path / "ws")
    path = plan_path(ws)
    path.parent.mkdir(parents=True)
    path.write_text("")
    script = write_script(tmp_path / "script.json", turns, chunk=16)
    return ws, scripted_args(script, tmp_path / "t.jsonl")


async def test_plain_client_sees_the_full_checklist_with_done(tmp_path: Path) -> None:
    """The Do run an approval starts: its `done` update comes after the last mark."""
    ws, args = session(tmp_path, plan_turns() + work_turns())
    path = plan_path(ws)
    async with running_server([ws], *args) as ed:
        ed.open(path)
        ed.open(ws / "hello.py")
        watch = AtRunEnd(
            lambda u: u.get("kind") == "done",
            lambda: {"buffer": ed.buffer_text(path), "disk": disk(path)},
        )
        ed.ed.updates = watch
        result = await ed.request("planLsp/prompt", {"text": "be polite"})
        assert result["stopReason"] == "plan_submitted"
        await ed.command("planLsp.approvePlan", {"permissionMode": "auto_edit"})
        await ed.wait_update(lambda u: u["kind"] == "done" and u["stopReason"] == "end_turn")
        assert len(watch.seen) == 2, watch.seen  # the planning run's and the Do run's
        assert_full_checklist(watch.seen[-1], "the Do run's done update")
        assert ed.buffer_text(ws / "hello.py") == "print('hello')\n"


async def test_prompt_answer_comes_after_the_last_mark(tmp_path: Path) -> None:
    """A build-mode run the user asked for (approved and saved, then a prompt): the answer
    to `planLsp/prompt` is sent once the last mark is in the buffer and on disk."""
    ws, args = session(tmp_path, plan_turns() + work_turns())
    path = plan_path(ws)
    async with running_server([ws], *args) as ed:
        ed.open(path)
        ed.open(ws / "hello.py")
        await ed.request("planLsp/prompt", {"text": "plan it"})
        # auto_edit: the step's edit happens (a denied edit leaves its step unticked)
        state = await ed.request(
            "planLsp/approvePlan", {"execute": False, "permissionMode": "auto_edit"}
        )
        assert state["planStatus"] == "approved" and not state["running"]
        seen: list[dict[str, Any]] = []
        # The answer's future is resolved in the client's handler of the answer.
        future = ed.client.protocol.send_request("planLsp/prompt", {"text": "carry it out"})
        future.add_done_callback(
            lambda _f: seen.append({"buffer": ed.buffer_text(path), "disk": disk(path)})
        )
        result = to_plain(await asyncio.wait_for(asyncio.wrap_future(future), 60))
        assert result["stopReason"] == "end_turn", result
        assert_full_checklist(seen[0], "the prompt's answer")


@pytest.mark.parametrize("client", sorted(QUIRKS))
async def test_editor_habits_see_the_full_checklist_at_the_run_end(
    tmp_path: Path, client: str
) -> None:
    quirks = QUIRKS[client]
    ws, args = session(tmp_path, plan_turns() + work_turns())
    path = plan_path(ws)
    async with quirky_server(ws, quirks, *args) as ed:
        ed.open(path)
        ed.open(ws / "hello.py")

        def is_end(item: Any) -> bool:
            method, params = item
            if method == "planLsp/update":
                return bool(params.get("kind") == "done")
            return bool(
                not quirks.plan_lsp
                and method == "window/logMessage"
                and str(params.get("message", "")).startswith("plan-lsp: run finished")
            )

        watch = AtRunEnd(is_end, lambda: {"buffer": ed.text(path), "disk": disk(path)})
        ed.received.notifications = watch
        result = await ed.request("planLsp/prompt", {"text": "be polite"})
        assert result["stopReason"] == "plan_submitted"
        await ed.settle()
        await ed.command("planLsp.approvePlan", {"permissionMode": "auto_edit"}, timeout=20)
        await wait_for_end(ed, watch)
        assert_full_checklist(watch.seen[-1], f"the Do run end ({client})")
        assert ed.text(ws / "hello.py") == "print('hello')\n"


async def wait_for_end(ed: QuirkyEditor, watch: AtRunEnd) -> None:
    """Until the client has seen the Do run end (the planning run's end came first)."""
    await ed.wait_for("the Do run's end", lambda: len(watch.seen) >= 2, 60)


async def test_a_client_that_refuses_the_marks_still_gets_them_on_disk(tmp_path: Path) -> None:
    """An editor that refuses every checklist edit: the run still ends (within the bounded
    wait), the file holds the full checklist when `done` arrives, and the log says why the
    buffer does not."""
    ws, args = session(tmp_path, plan_turns() + work_turns())
    path = plan_path(ws)
    log = tmp_path / "server.log"
    async with running_server([ws], *args, "--log-file", str(log)) as ed:
        ed.open(path)
        watch = AtRunEnd(
            lambda u: u.get("kind") == "done",
            lambda: {"buffer": ed.buffer_text(path), "disk": disk(path)},
        )
        ed.ed.updates = watch
        await ed.request("planLsp/prompt", {"text": "be polite"})
        ed.ed.refuse_edits = 1_000_000
        await ed.command("planLsp.approvePlan", {"permissionMode": "auto_edit"})
        await ed.wait_update(lambda u: u["kind"] == "done" and u["stopReason"] == "end_turn")
        at_end = watch.seen[-1]
        assert at_end["disk"] == DONE_PLAN, at_end
        assert at_end["buffer"] == PLAN, at_end  # nothing was applied to it
    assert f"the checklist reached {path.resolve()} on disk only" in log.read_text()
