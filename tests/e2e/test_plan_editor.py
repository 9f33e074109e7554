"""PLAN.md in the editor (issue: live drafts, approval by code lens / action, the plan as
a contract) — through the real server with a client that applies edits like an editor."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path
from typing import Any

from lsprotocol import types

from tests.e2e.scripts import requests_of, sample_project, scripted_session, write_script
from tests.lsp_harness import Editor, apply_text_edits, running_server

LONG_PLAN = (
    "# Plan: polite greeting\n\n"
    "## Steps\n"
    "- [ ] Change the greeting in `hello.py` to `hello, world` — ünïcödé ✓ 🚀.\n"
    "- [ ] Add a docstring to `hello.py`.\n\n"
    "## Notes\n"
    + "".join(f"- detail {i}: keep the change small and reviewable.\n" for i in range(40))
)
REVISED_PLAN = "# Plan v2\n\n1. Change `hello.py` only.\n2. Nothing else.\n"


def plan_turns(plan: str, delay_ms: int = 2) -> list[dict[str, Any]]:
    return [
        {
            "delay_ms": delay_ms,
            "tool_calls": [{"name": "plan_write", "arguments": {"content": plan}}],
        },
        {"tool_calls": [{"name": "exit_plan_mode", "arguments": {}}]},
    ]


def do_turns() -> list[dict[str, Any]]:
    return [
        {
            "tool_calls": [
                {
                    "name": "todo_write",
                    "arguments": {
                        "todos": [
                            {"content": "Change the greeting in hello.py", "status": "completed"},
                            {"content": "Add a docstring to hello.py", "status": "in_progress"},
                        ]
                    },
                },
                {
                    "name": "edit_file",
                    "arguments": {
                        "path": "hello.py",
                        "old_text": "print('hi')",
                        "new_text": "print('hello, world')",
                    },
                },
            ]
        },
        {"text": "Done."},
    ]


def plan_path(ws: Path) -> Path:
    return ws / ".plan-lsp" / "plans" / "PLAN.md"


start = scripted_session


async def lenses(ed: Editor, path: Path) -> list[types.CodeLens]:
    result = await ed.client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=path.as_uri()))
    )
    return list(result or [])


async def test_streamed_draft_arrives_as_incremental_edits(tmp_path: Path) -> None:
    ws, _t, cm = start(tmp_path, plan_turns(LONG_PLAN))
    async with cm as ed:
        result = await ed.request("planLsp/prompt", {"text": "plan it"})
        assert result["stopReason"] == "plan_submitted"
        path = plan_path(ws)
        # the server opened PLAN.md without stealing focus
        assert ed.ed.shown_documents and ed.ed.shown_documents[0].take_focus is False
        edits = [e for e in ed.ed.applied_edits]
        assert len(edits) > 3, "the draft arrived in several edits"
        # replaying the edits on the empty document reproduces the plan exactly
        text = ""
        sent = 0
        for params in edits:
            for change in params.edit.document_changes or []:
                assert isinstance(change, types.TextDocumentEdit)
                assert change.text_document.version is not None  # versioned edits
                text = apply_text_edits(text, list(change.edits))  # type: ignore[arg-type]
                sent += sum(len(e.new_text) for e in change.edits)  # type: ignore[union-attr]
        assert text == LONG_PLAN
        assert ed.buffer_text(path) == LONG_PLAN
        assert path.read_text() == LONG_PLAN
        # never a whole-document replacement per delta: bytes sent stay near the plan's size
        assert sent <= 2 * len(LONG_PLAN)
        drafts = ed.updates_of("planDraft")
        assert any(d.get("status") == "drafting" and d["chars"] > 0 for d in drafts)


async def test_refused_edits_are_recomputed_and_nothing_is_lost(tmp_path: Path) -> None:
    ws, _t, cm = start(tmp_path, plan_turns(LONG_PLAN))
    async with cm as ed:
        ed.ed.refuse_edits = 3
        await ed.request("planLsp/prompt", {"text": "plan it"})
        assert ed.buffer_text(plan_path(ws)) == LONG_PLAN
        assert len(ed.ed.applied_edits) > 3


async def test_user_edits_are_what_gets_approved(tmp_path: Path) -> None:
    ws, _t, cm = start(tmp_path, plan_turns(LONG_PLAN))
    async with cm as ed:
        await ed.request("planLsp/prompt", {"text": "plan it"})
        path = plan_path(ws)
        edited = LONG_PLAN + "- [ ] Also update the README (added by the user).\n"
        ed.type_into(path, edited)
        await ed.state()  # the change is processed in order before this answers
        names = [lens.command.title for lens in await lenses(ed, path) if lens.command]
        assert names[:4] == [
            "Approve (auto-accept edits)", "Approve (ask before edits)", "Approve — step by step",
            "Reject…",
        ]  # fmt: skip
        state = await ed.command("planLsp.approvePlan", {"execute": False})
        assert state["mode"] == "build" and state["planStatus"] == "approved"
        assert state["approvedPlan"]["text"] == edited
        assert state["approvedPlan"]["sha256"] == hashlib.sha256(edited.encode()).hexdigest()
        assert path.read_text() == edited
        assert not state["running"]  # approve-and-save starts no run
        # a second approve-and-save of the unchanged plan is a no-op with a message (approving
        # it to be carried out would start its Do run: tests/e2e/test_plan_transitions.py)
        again = await ed.command("planLsp.approvePlan", {"execute": False})
        assert again["approvedPlan"] == state["approvedPlan"] and not again["running"]
        assert any("already approved" in m.message for m in ed.client.messages)
        # changing the approved plan sends it back to drafting, with a diagnostic
        ed.type_into(path, edited + "- [ ] One more step.\n")
        state = await ed.state()
        assert state["planStatus"] == "drafting"
        diags = ed.client.diagnostics.get(path.as_uri(), [])
        assert any(d.code == "changed-after-approval" for d in diags)


async def test_diagnostics_follow_a_burst_of_changes_once(tmp_path: Path) -> None:
    """A plan changed many times in a row (as while it streams) is checked for the latest
    text, not once per change."""
    ws, _t, cm = start(tmp_path, plan_turns(LONG_PLAN))
    async with cm as ed:
        await ed.request("planLsp/prompt", {"text": "plan it"})
        path = plan_path(ws)
        uri = path.as_uri()
        text = LONG_PLAN
        before = len(ed.ed.published)
        for i in range(30):
            text += f"- [ ] Step {i} typed in a burst (TODO).\n"
            ed.type_into(path, text)
        await ed.state()  # every change is in before this answers
        final = ed.ed.buffers[uri].version

        async def latest_checked() -> None:
            while (uri, final) not in ed.ed.published:
                ed.ed.published_event.clear()
                await ed.ed.published_event.wait()

        await asyncio.wait_for(latest_checked(), 30)
        burst = [v for u, v in ed.ed.published[before:] if u == uri]
        assert len(burst) < 10, burst  # one per change without coalescing: 30
        assert any("TODO" in d.message for d in ed.client.diagnostics[uri])


async def test_approve_with_fresh_context_carries_task_and_plan_only(tmp_path: Path) -> None:
    ws, transcript, cm = start(tmp_path, plan_turns(LONG_PLAN) + do_turns())
    async with cm as ed:
        ed.open(ws / "hello.py")
        await ed.request("planLsp/prompt", {"text": "make it polite"})
        await ed.command(
            "planLsp.approvePlan", {"clearContext": True, "permissionMode": "auto_edit"}
        )
        done = await ed.wait_update(
            lambda u: u["kind"] == "done" and u.get("stopReason") == "end_turn"
        )
        assert done["deviations"] == []
        # the Do run's edit went through the editor: the open buffer shows it
        assert ed.buffer_text(ws / "hello.py") == "print('hello, world')\n"
        # checklist progress was mirrored into the plan buffer
        plan_text = ed.buffer_text(plan_path(ws)) or ""
        assert "- [x] Change the greeting in `hello.py`" in plan_text
        assert "- [~] Add a docstring to `hello.py`." in plan_text
        state = await ed.state()
        assert state["planStatus"] == "approved" and state["outcome"] == "completed"
    do_request = next(r for r in requests_of(transcript) if r["mode"] == "build")
    stored = [m for m in do_request["messages"] if not m.get("meta", {}).get("ephemeral")]
    assert [m["role"] for m in stored] == ["system", "user"]
    assert "make it polite" in stored[1]["content"] and LONG_PLAN in stored[1]["content"]


async def test_ask_before_edits_prompts_and_a_denial_is_honoured(tmp_path: Path) -> None:
    ws, _t, cm = start(tmp_path, plan_turns(LONG_PLAN) + do_turns())
    async with cm as ed:
        ed.ed.answer_message = lambda p: "Deny" if "edit_file" in p.message else None
        await ed.request("planLsp/prompt", {"text": "x"})
        await ed.command("planLsp.approvePlan", {"permissionMode": "ask"})
        await ed.wait_update(lambda u: u["kind"] == "done" and u.get("stopReason") == "end_turn")
        assert any("edit_file" in r.message for r in ed.ed.message_requests)
        assert {a.title for a in ed.ed.message_requests[0].actions or []} == {
            "Allow once",
            "Allow always",
            "Deny",
        }
        assert (ws / "hello.py").read_text() == "print('hi')\n"
        assert any(u["tool"] == "edit_file" for u in ed.updates_of("blocked"))


async def test_reject_with_feedback_starts_a_new_planning_run_and_offers_a_diff(
    tmp_path: Path,
) -> None:
    turns = plan_turns(LONG_PLAN) + plan_turns(REVISED_PLAN)
    ws, transcript, cm = start(tmp_path, turns)
    async with cm as ed:
        first = await ed.request("planLsp/prompt", {"text": "plan it"})
        path = plan_path(ws)
        # review notes written in the buffer are the feedback
        ed.type_into(path, LONG_PLAN + "> feedback: only touch hello.py\n")
        await ed.state()
        state = await ed.command("planLsp.rejectPlan", {})
        assert state["mode"] == "plan"
        done = await ed.wait_update(lambda u: u["kind"] == "done" and u["runId"] != first["runId"])
        assert done["stopReason"] == "plan_submitted"
        assert ed.buffer_text(path) == REVISED_PLAN
        state = await ed.state()
        assert state["planStatus"] == "submitted"
        titles = [lens.command.title for lens in await lenses(ed, path) if lens.command]
        assert "Compare with previous revision" in titles
        revs = await ed.request("planLsp/planRevisions", {})
        assert revs["previous"] == LONG_PLAN and revs["current"] == REVISED_PLAN
        prev_path = Path(revs["previousUri"][len("file://") :])
        assert prev_path.read_text() == LONG_PLAN and ".plan-lsp/revisions" in str(prev_path)
    feedback_request = requests_of(transcript)[2]
    assert any("only touch hello.py" in m["content"] for m in feedback_request["messages"])


async def test_reject_without_feedback_asks_the_model_nothing(tmp_path: Path) -> None:
    _ws, transcript, cm = start(tmp_path, plan_turns(LONG_PLAN))
    async with cm as ed:
        await ed.request("planLsp/prompt", {"text": "plan it"})
        state = await ed.request("planLsp/rejectPlan", {})
        assert state["planStatus"] == "rejected" and not state["running"]
    assert len(requests_of(transcript)) == 2


async def test_code_actions_offer_every_approval_variant(tmp_path: Path) -> None:
    ws, _t, cm = start(tmp_path, plan_turns("# Plan\n\n1. Do it. TODO decide name\n"))
    async with cm as ed:
        await ed.request("planLsp/prompt", {"text": "plan it"})
        path = plan_path(ws)
        actions = await ed.client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
                range=types.Range(
                    start=types.Position(line=0, character=0),
                    end=types.Position(line=0, character=0),
                ),
                context=types.CodeActionContext(diagnostics=[]),
            )
        )
        titles = {a.title for a in actions or []}
        assert {
            "Approve (auto-accept edits)",
            "Approve (ask before edits)",
            "Approve and save without executing",
            "Approve with a fresh context",
        } <= titles
        diags = ed.client.diagnostics.get(path.as_uri(), [])
        assert any("TODO" in d.message for d in diags)


async def test_state_answers_promptly_while_a_run_streams(tmp_path: Path) -> None:
    slow = {"delay_ms": 20, "text": "x" * 400}
    _ws, _t, cm = start(tmp_path, [slow])
    async with cm as ed:
        task = asyncio.ensure_future(ed.request("planLsp/prompt", {"text": "go"}))
        await ed.wait_update(lambda u: u["kind"] == "text")
        state = await ed.state()
        assert state["running"] is True
        assert not task.done()
        await ed.request("planLsp/cancel", {})
        result = await task
        assert result["stopReason"] == "cancelled"
        assert (await ed.state())["running"] is False


async def test_plan_changed_on_disk_by_another_program_is_reflected(tmp_path: Path) -> None:
    ws, _t, cm = start(tmp_path, plan_turns(LONG_PLAN))
    async with cm as ed:
        await ed.request("planLsp/prompt", {"text": "plan it"})
        path = plan_path(ws)
        ed.client.text_document_did_close(
            types.DidCloseTextDocumentParams(
                text_document=types.TextDocumentIdentifier(uri=path.as_uri())
            )
        )
        state = await ed.command("planLsp.approvePlan", {"execute": False})
        assert state["planStatus"] == "approved"
        start_at = len(ed.ed.updates)
        path.write_text(LONG_PLAN + "- [ ] A step added outside the editor.\n")
        await ed.wait_update(
            lambda u: u["kind"] == "planDraft" and u.get("status") == "changedOnDisk",
            start=start_at,
        )
        assert (await ed.state())["planStatus"] == "drafting"
        # The lens says the added step is unapproved text, and offers approval again.
        titles = [lens.command.title for lens in await lenses(ed, path) if lens.command]
        assert titles[0] == (
            "Changed since approval: step 3 not approved — approve again to run it"
        )
        assert "Approve (ask before edits)" in titles


async def test_an_approved_plan_changed_while_no_server_watched_is_noticed(
    tmp_path: Path,
) -> None:
    """Changed on disk while the editor was closed (or before watching began): the next
    server finds the approved plan no longer holds the approved text."""
    ws, _t, cm = start(tmp_path, plan_turns(LONG_PLAN))
    async with cm as ed:
        await ed.request("planLsp/prompt", {"text": "plan it"})
        state = await ed.command("planLsp.approvePlan", {"execute": False})
        assert state["planStatus"] == "approved"
    plan_path(ws).write_text(LONG_PLAN + "- [ ] A step added while no server watched.\n")
    async with running_server([ws], "--plan-shell", "classified") as ed:
        assert (await ed.state())["planStatus"] == "approved"  # restored as it was left
        await ed.wait_update(
            lambda u: u["kind"] == "planDraft" and u.get("status") == "changedOnDisk"
        )
        assert (await ed.state())["planStatus"] == "drafting"


async def test_a_revised_plan_overwrites_the_previous_one_without_an_open_buffer(
    tmp_path: Path,
) -> None:
    ws = sample_project(tmp_path / "ws")
    script = write_script(tmp_path / "s.json", plan_turns(LONG_PLAN) + plan_turns(REVISED_PLAN))
    async with running_server(
        [ws], "--provider", "scripted", "--script", str(script), "--plan-shell", "classified"
    ) as ed:
        # this client never opens documents: showDocument is refused
        ed.client.protocol.fm.features[types.WINDOW_SHOW_DOCUMENT] = lambda *a: (
            types.ShowDocumentResult(success=False)
        )
        await ed.request("planLsp/prompt", {"text": "plan it"})
        await ed.request("planLsp/rejectPlan", {"feedback": "shorter please"})
        await ed.wait_update(
            lambda u: (
                u["kind"] == "done"
                and u.get("stopReason") == "plan_submitted"
                and len(ed.updates_of("done")) >= 2
            )
        )
        assert plan_path(ws).read_text() == REVISED_PLAN
        assert not [u for u in ed.updates_of("toolResult") if u["isError"]]
        revs = await ed.request("planLsp/planRevisions", {})
        assert revs["current"] == REVISED_PLAN


async def test_approving_a_plan_with_errors_asks_for_confirmation(tmp_path: Path) -> None:
    ws, _t, cm = start(tmp_path, plan_turns(LONG_PLAN))
    async with cm as ed:
        await ed.request("planLsp/prompt", {"text": "plan it"})
        assert (await ed.state())["shellProtection"]
        path = plan_path(ws)
        ed.type_into(path, LONG_PLAN + "x" * 50_000)
        ed.ed.answer_message = lambda p: "Cancel"
        state = await ed.command("planLsp.approvePlan", {"execute": False})
        assert state["planStatus"] == "submitted" and state["mode"] == "plan"
        assert "50,000" in ed.ed.message_requests[-1].message
        ed.ed.answer_message = lambda p: "Approve anyway"
        state = await ed.command("planLsp.approvePlan", {"execute": False})
        assert state["planStatus"] == "approved"
