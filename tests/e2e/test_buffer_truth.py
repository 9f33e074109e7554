"""The buffer is the truth, with the clients users really have.

Each plan-flow test streams a plan into PLAN.md through the real server and a scripted
client with one habit of a real editor (tests/e2e/quirky_client.py), then requires that the
buffer, the plan and the approved text are the same string."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.quirky_client import (
    EmacsLikeClient,
    Quirks,
    QuirkyEditor,
    quirky_server,
    span_text,
)
from tests.e2e.scripts import plan_then_do_turns, sample_project, scripted_args, write_script

PLANS = {
    "emoji": (
        "# Plan: ship the 🚀 edition\n\n"
        "1. Rename `launch` to `🚀launch` in `hello.py` 🎉🎉.\n"
        "2. Keep 👍🏽 and 👨‍👩‍👧 exactly as they are.\n"
        "3. Check the 🚀 edition\n"
    ),
    "cjk": (
        "# 計画: 挨拶を丁寧にする\n\n"
        "1. `hello.py` の挨拶を「こんにちは、世界」に変える。\n"
        "2. 한국어 주석을 남긴다 — 中文也可以。\n"
    ),
    "combining": (
        "# Plan: café, naïve, Zoë\n\n"
        "1. Keep the decomposed forms cafe\u0301 and nai\u0308ve.\n"
        "2. Ǹ̷̢o̴ ̷z̸a̸l̶g̵o̵ in the output.\n"
    ),
    "long_lines": (
        "# Plan: long lines\n\n"
        + "".join(f"{i}. " + ("word ✓ " * 120) + "end\n" for i in range(1, 6))
    ),
}
PLAN = PLANS["emoji"]


def plan_turns(plan: str, rounds: int = 1) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = []
    for _ in range(rounds):
        turns += [
            {"delay_ms": 2, "tool_calls": [{"name": "plan_write", "arguments": {"content": plan}}]},
            {"tool_calls": [{"name": "exit_plan_mode", "arguments": {}}]},
        ]
    return turns


# The Do run's edit of the shared session: hello.py's greeting becomes "hello, world".
EDIT_HELLO = plan_then_do_turns()[4]


def plan_path(ws: Path) -> Path:
    return ws / ".plan-lsp" / "plans" / "PLAN.md"


def session(tmp_path: Path, turns: list[dict[str, Any]], quirks: Quirks, *args: str) -> Any:
    ws = sample_project(tmp_path / "ws")
    script = write_script(tmp_path / "script.json", turns, chunk=7)
    server = quirky_server(ws, quirks, *scripted_args(script, tmp_path / "t.jsonl"), *args)
    return ws, server


def open_empty_plan(ed: QuirkyEditor, ws: Path) -> Path:
    path = plan_path(ws)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")
    ed.open(path)
    return path


def describe(ed: QuirkyEditor) -> str:
    answers = ed.received.edit_answers
    refused = [a for a in answers if not a.get("applied")]
    return (
        f"{len(answers)} applyEdit answers, {len(refused)} not applied "
        f"(first: {refused[:2]}); negotiated {ed.encoding}"
    )


async def plan_and_approve(ed: QuirkyEditor, ws: Path, plan: str) -> tuple[str, str]:
    """Prompt, let the client settle, approve without executing: (buffer, approved text)."""
    result = await ed.request("planLsp/prompt", {"text": "plan it"})
    assert result["stopReason"] == "plan_submitted", result
    await ed.settle()
    buffer = ed.text(plan_path(ws))
    assert buffer is not None, "PLAN.md never reached the editor"
    state = await ed.request("planLsp/approvePlan", {"execute": False}, timeout=20)
    approved = state["approvedPlan"]["text"] if state.get("approvedPlan") else None
    assert approved is not None, state
    return buffer, approved


def assert_truth(buffer: str, approved: str, plan: str, ed: QuirkyEditor) -> None:
    assert buffer == plan, (
        f"the buffer is not the plan ({describe(ed)}):\n"
        f"plan   {len(plan)}: {plan!r}\nbuffer {len(buffer)}: {buffer!r}"
    )
    assert approved == plan, (
        f"the approved text is not the plan ({describe(ed)}):\n"
        f"plan     {len(plan)}: {plan!r}\napproved {len(approved)}: {approved!r}"
    )


# -- point 1: a document model that cannot go stale ---------------------------------------


@pytest.mark.parametrize("stale_edit", ["refuse", "error", "drop"])
async def test_debounced_did_change(tmp_path: Path, stale_edit: str) -> None:
    """One coalesced didChange 150 ms after the edits (Neovim's default); an edit for an
    older version is refused (VS Code), an error (eglot) or dropped (Neovim)."""
    quirks = Quirks(debounce_s=0.15, stale_edit=stale_edit)  # type: ignore[arg-type]
    ws, server = session(tmp_path, plan_turns(PLAN), quirks)
    async with server as ed:
        open_empty_plan(ed, ws)
        buffer, approved = await plan_and_approve(ed, ws, PLAN)
        assert_truth(buffer, approved, PLAN, ed)


async def test_apply_edit_answered_after_did_change(tmp_path: Path) -> None:
    quirks = Quirks(answer_late_s=0.05)
    ws, server = session(tmp_path, plan_turns(PLAN), quirks)
    async with server as ed:
        open_empty_plan(ed, ws)
        buffer, approved = await plan_and_approve(ed, ws, PLAN)
        assert_truth(buffer, approved, PLAN, ed)


@pytest.mark.parametrize("versions", ["zero", "null", "jumps"])
async def test_version_habits(tmp_path: Path, versions: str) -> None:
    quirks = Quirks(versions=versions, debounce_s=0.15)  # type: ignore[arg-type]
    ws, server = session(tmp_path, plan_turns(PLAN), quirks)
    async with server as ed:
        open_empty_plan(ed, ws)
        buffer, approved = await plan_and_approve(ed, ws, PLAN)
        assert_truth(buffer, approved, PLAN, ed)


# -- point 2: position encodings -----------------------------------------------------------


@pytest.mark.parametrize("plan_name", sorted(PLANS))
@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
async def test_negotiated_encoding(tmp_path: Path, encoding: str, plan_name: str) -> None:
    plan = PLANS[plan_name]
    ws, server = session(tmp_path, plan_turns(plan), Quirks(encoding=encoding))  # type: ignore[arg-type]
    async with server as ed:
        assert ed.encoding == encoding, "the server did not take the only encoding offered"
        open_empty_plan(ed, ws)
        buffer, approved = await plan_and_approve(ed, ws, plan)
        assert_truth(buffer, approved, plan, ed)


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
async def test_diagnostics_in_the_negotiated_encoding(tmp_path: Path, encoding: str) -> None:
    plan = "# Plan 🚀\n\n1. Rename 🚀👍🏽 café — TBD later.\n"
    ws, server = session(tmp_path, plan_turns(plan), Quirks(encoding=encoding))  # type: ignore[arg-type]
    async with server as ed:
        path = open_empty_plan(ed, ws)
        await ed.request("planLsp/prompt", {"text": "plan it"})
        uri = path.resolve().as_uri()

        def marker() -> Any:
            for params in reversed(ed.received.of("textDocument/publishDiagnostics")):
                if params["uri"] == uri:
                    found = [
                        d
                        for d in params["diagnostics"]
                        if d.get("code") == "plan-unresolved-marker"
                    ]
                    return found or None
            return None

        diags = await ed.wait_for("the unresolved-marker diagnostic", marker, 10)
        from lsprotocol import types

        rng = types.Range(
            start=types.Position(**diags[0]["range"]["start"]),
            end=types.Position(**diags[0]["range"]["end"]),
        )
        assert span_text(ed.text(path) or "", rng, ed.units) == "TBD", diags[0]


async def test_columns_counted_in_characters(tmp_path: Path) -> None:
    """lsp-mode 8 claims UTF-16 but counts characters: the buffer and the approved text must
    still agree with the plan (repaired with a whole-document, line-only replacement)."""
    quirks = Quirks(columns_in_characters=True)
    ws, server = session(tmp_path, plan_turns(PLAN), quirks)
    async with server as ed:
        open_empty_plan(ed, ws)
        buffer, approved = await plan_and_approve(ed, ws, PLAN)
        assert_truth(buffer, approved, PLAN, ed)


# -- point 3: capability discipline --------------------------------------------------------


async def test_no_show_document_still_puts_the_plan_in_the_editor(tmp_path: Path) -> None:
    """Neovim 0.7 and eglot 1.9: no window.showDocument, PLAN.md not open before the prompt."""
    ws, server = session(tmp_path, plan_turns(PLAN), Quirks(show_document="absent"))
    async with server as ed:
        buffer, approved = await plan_and_approve(ed, ws, PLAN)
        assert not ed.received.of("window/showDocument"), "showDocument sent without the capability"
        assert_truth(buffer, approved, PLAN, ed)
        messages = [m["message"] for m in ed.received.of("window/showMessage")]
        assert any("PLAN.md" in m for m in messages), f"no message names the plan file: {messages}"


async def test_show_document_answered_null(tmp_path: Path) -> None:
    ws, server = session(tmp_path, plan_turns(PLAN), Quirks(show_document="null"))
    async with server as ed:
        buffer, approved = await plan_and_approve(ed, ws, PLAN)
        assert_truth(buffer, approved, PLAN, ed)


@pytest.mark.parametrize("show_document", ["absent", "null"])
async def test_compare_revisions_answers(tmp_path: Path, show_document: str) -> None:
    """`planLsp.showPreviousRevision` answers whatever the client does with showDocument."""
    revised = PLAN.replace("3. Check", "3. Double-check")
    turns = plan_turns(PLAN) + plan_turns(revised)
    ws, server = session(tmp_path, turns, Quirks(show_document=show_document))  # type: ignore[arg-type]
    async with server as ed:
        open_empty_plan(ed, ws)
        await ed.request("planLsp/prompt", {"text": "plan it"})
        await ed.request("planLsp/rejectPlan", {"feedback": "check twice"}, timeout=20)
        await ed.wait_for("the revised plan", lambda: len(ed.updates("done")) >= 2, 30)
        result = await ed.command("planLsp.showPreviousRevision", {}, timeout=15)
        assert result["previous"] == PLAN and result["current"] == revised
        if show_document == "absent":
            assert not ed.received.of("window/showDocument")


@pytest.mark.parametrize("progress", [True, False])
async def test_client_without_plan_lsp_gets_standard_messages(
    tmp_path: Path, progress: bool
) -> None:
    quirks = Quirks(plan_lsp=False, work_done_progress=progress)
    ws, server = session(tmp_path, plan_turns(PLAN), quirks)
    async with server as ed:
        open_empty_plan(ed, ws)
        buffer, approved = await plan_and_approve(ed, ws, PLAN)
        assert not ed.updates(), (
            f"{len(ed.updates())} planLsp/update sent to a client without planLsp"
        )
        reports = ed.received.of("$/progress")
        logs = ed.received.of("window/logMessage")
        if progress:
            assert any(r["value"].get("message") for r in reports), "no $/progress messages"
        else:
            assert not reports and not ed.received.of("window/workDoneProgress/create")
            assert logs, "no window/logMessage for a client without progress"
        assert_truth(buffer, approved, PLAN, ed)


async def test_unanswered_progress_create_does_not_delay_the_run(tmp_path: Path) -> None:
    """A run started from the approve command begins at once, even though the client never
    answers window/workDoneProgress/create (today: 5 s later)."""
    turns = [*plan_turns(PLAN), EDIT_HELLO, {"text": "Done."}]
    ws, server = session(tmp_path, turns, Quirks(answer_progress_create=False))
    async with server as ed:
        open_empty_plan(ed, ws)
        ed.open(ws / "hello.py")
        await ed.request("planLsp/prompt", {"text": "plan it"})
        await ed.settle()
        started = time.monotonic()
        await ed.command("planLsp.approvePlan", {"permissionMode": "auto_edit"}, timeout=20)
        await ed.wait_for(
            "the Do edit", lambda: ed.text(ws / "hello.py") == "print('hello, world')\n", 20
        )
        waited = time.monotonic() - started
        assert waited < 2.5, f"the Do run's edit came {waited:.1f}s after the approval"


# -- point 4: buffer and disk ----------------------------------------------------------------


async def test_do_edit_is_on_disk_before_the_next_command(tmp_path: Path) -> None:
    """hello.py is open and unmodified; the Do run edits it, then runs `cat hello.py`: the
    command reads the edit from disk (the client has no auto-save)."""
    cat = {"tool_calls": [{"name": "bash", "arguments": {"command": "cat hello.py"}}]}
    turns = [*plan_turns(PLAN), EDIT_HELLO, cat, {"text": "Done."}]
    ws, server = session(tmp_path, turns, Quirks())
    async with server as ed:
        ed.answer_message = "Allow once"
        open_empty_plan(ed, ws)
        ed.open(ws / "hello.py")
        await ed.request("planLsp/prompt", {"text": "plan it"})
        await ed.settle()
        await ed.command("planLsp.approvePlan", {"permissionMode": "auto_edit"}, timeout=20)
        done = await ed.wait_for("the Do run's end", lambda: len(ed.updates("done")) >= 2, 30)
        assert done
        bash = [u for u in ed.updates("toolResult") if u.get("tool") == "bash"]
        assert bash, "the bash call did not run"
        assert "hello, world" in str(bash[-1].get("content")), (
            f"the command read the old file from disk: {bash[-1].get('content')!r}"
        )
        assert ed.text(ws / "hello.py") == "print('hello, world')\n"
        assert (ws / "hello.py").read_text() == "print('hello, world')\n", "not on disk at the end"


async def test_unsaved_user_changes_are_never_written_behind_the_user(tmp_path: Path) -> None:
    turns = [*plan_turns(PLAN), EDIT_HELLO, {"text": "Done."}]
    ws, server = session(tmp_path, turns, Quirks())
    async with server as ed:
        open_empty_plan(ed, ws)
        hello = ws / "hello.py"
        ed.open(hello)
        ed.type_into(hello, "print('hi')\n# my unsaved note\n")
        await ed.request("planLsp/prompt", {"text": "plan it"})
        await ed.settle()
        await ed.command("planLsp.approvePlan", {"permissionMode": "auto_edit"}, timeout=20)
        await ed.wait_for("the Do run's end", lambda: len(ed.updates("done")) >= 2, 30)
        assert "# my unsaved note" in (ed.text(hello) or ""), "the user's change left the buffer"
        assert "my unsaved note" not in hello.read_text(), (
            "the user's unsaved change was written to disk behind their back"
        )


# -- Emacs clients -----------------------------------------------------------------------------


@pytest.mark.parametrize("habit", ["drop", "strand"])
async def test_messages_right_after_an_answer_reach_emacs_clients(
    tmp_path: Path, habit: str
) -> None:
    """Both Emacs clients read the server's output in chunks and, once the answer to one of
    their requests is dispatched, lose (lsp-mode) or leave unread until more output arrives
    (eglot 1.9) the rest of the chunk. The approve command's answer is followed at once by
    the Do run's messages: its edit must land at once all the same, and nothing but the
    server's read probes may be lost."""
    lsp_mode = habit == "drop"
    quirks = Quirks(
        after_answer=habit,  # type: ignore[arg-type]
        client_name="emacs" if lsp_mode else None,
        window=lsp_mode,  # eglot 1.9 declares no window capabilities and no clientInfo
        show_document="absent",
        plan_lsp=False,
    )
    turns = [*plan_turns(PLAN), EDIT_HELLO, {"text": "Done."}]
    ws, server = session(tmp_path, turns, quirks)
    async with server as ed:
        open_empty_plan(ed, ws)
        hello = ws / "hello.py"
        ed.open(hello)
        result = await ed.request("planLsp/prompt", {"text": "plan it"}, timeout=30)
        assert result["stopReason"] == "plan_submitted", result
        await ed.settle()
        await ed.command("planLsp.approvePlan", {"permissionMode": "auto_edit"}, timeout=20)
        await ed.wait_for(
            "the Do run's edit", lambda: ed.text(hello) == "print('hello, world')\n", 10
        )
        assert ed.text(plan_path(ws)) == PLAN
        assert isinstance(ed.client, EmacsLikeClient) and ed.client.reads is not None
        lost = [m for m in ed.client.reads.lost if m.get("method") != "workspace/workspaceFolders"]
        assert not lost, f"messages the client never saw: {lost}"


def lsp_mode_deferred(**kw: Any) -> Quirks:
    """lsp-mode 8.0 with `lsp-deferred`: names itself "emacs", no showDocument, loads a file
    an edit names into a buffer it does not open until the user shows it."""
    return Quirks(
        client_name="emacs",
        show_document="absent",
        loads_without_opening=True,
        plan_lsp=False,
        **kw,
    )


async def test_plan_is_not_loaded_where_the_server_cannot_follow_it(tmp_path: Path) -> None:
    """PLAN.md not open in lsp-mode: no hidden buffer that the plan on disk would leave
    stale (Emacs would ask "changed on disk" when the user opens and edits it); the server
    names the file, and the user opens the plan as written."""
    ws, server = session(tmp_path, plan_turns(PLAN), lsp_mode_deferred())
    async with server as ed:
        result = await ed.request("planLsp/prompt", {"text": "plan it"})
        assert result["stopReason"] == "plan_submitted", result
        await ed.settle()
        messages = [m["message"] for m in ed.received.of("window/showMessage")]
        assert any(str(plan_path(ws)) in m for m in messages), messages
        ed.open(plan_path(ws))
        assert not ed.questions, ed.questions
        state = await ed.request("planLsp/approvePlan", {"execute": False}, timeout=20)
        assert_truth(ed.text(plan_path(ws)) or "", state["approvedPlan"]["text"], PLAN, ed)


async def test_plan_opened_mid_stream_gets_the_rest_of_the_draft(tmp_path: Path) -> None:
    """The user opens PLAN.md a while after the server named it, while the plan is still
    streaming: the rest of the draft streams into that buffer (not only the final text at
    the end). The model writes the plan for about 4 s (the script's pace)."""
    write: dict[str, Any] = {"name": "plan_write", "arguments": {"content": PLAN}}
    turns: list[dict[str, Any]] = [
        {"delay_ms": 150, "tool_calls": [write]},
        {"tool_calls": [{"name": "exit_plan_mode", "arguments": {}}]},
    ]
    ws, server = session(tmp_path, turns, lsp_mode_deferred())
    async with server as ed:
        prompt = asyncio.ensure_future(ed.request("planLsp/prompt", {"text": "plan it"}))
        await ed.wait_for(
            "the message naming the plan",
            lambda: any("PLAN.md" in m["message"] for m in ed.received.of("window/showMessage")),
            15,
        )
        await asyncio.sleep(1.5)  # the user reads the message, then opens the file
        path = plan_path(ws)
        ed.open(path)
        assert (await prompt)["stopReason"] == "plan_submitted"
        await ed.settle()
        uri = path.resolve().as_uri()
        edits = [
            p
            for p in ed.received.of("workspace/applyEdit")
            if any(c["textDocument"]["uri"] == uri for c in p["edit"].get("documentChanges", []))
        ]
        assert len(edits) >= 3, f"{len(edits)} edits reached the opened plan"
        assert ed.text(path) == PLAN
        assert not ed.questions, ed.questions
