"""A buffer the editor reopens while the server edits it: the edit goes to the reopened
buffer, at its version, and the Do run's last checklist mark is in the buffer and on disk
when the run ends — through the real server.

Emacs rereads a file that changed on disk before it applies an edit to it (the user
answered "changed on disk; reread?", or `revert-without-query` matched): eglot sends
didClose and didOpen (its version starts again), then checks the edit's version against the
reopened buffer's and refuses it ("Edits on PLAN.md require version 1, you have 0"). The
server writes the plan's file behind an Emacs buffer whenever the client cannot save (no
`saveDocuments`), so with these clients every checklist mark meets a reopened buffer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.quirky_client import Quirks, quirky_server
from tests.e2e.test_checklist_run_end import (
    DONE_PLAN,
    AtRunEnd,
    assert_full_checklist,
    disk,
    plan_path,
    plan_turns,
    session,
    wait_for_end,
    work_turns,
)

REOPENING = {
    "eglot": Quirks(
        debounce_s=0.5,
        window=False,
        show_document="absent",
        plan_lsp=False,
        after_answer="strand",
        stale_edit="error",
        rereads_changed_file=True,
    ),
    "lsp-mode": Quirks(
        client_name="emacs",
        columns_in_characters=True,
        versions="zero",
        show_document="absent",
        plan_lsp=False,
        after_answer="drop",
        rereads_changed_file=True,
    ),
}


@pytest.mark.parametrize("client", sorted(REOPENING))
async def test_marks_reach_a_buffer_the_editor_reopened(tmp_path: Path, client: str) -> None:
    quirks = REOPENING[client]
    ws, args = session(tmp_path, plan_turns() + work_turns())
    path = plan_path(ws)
    log = tmp_path / "server.log"
    async with quirky_server(ws, quirks, *args, "--log-file", str(log)) as ed:
        ed.open(path)
        ed.open(ws / "hello.py")

        def is_end(item: Any) -> bool:
            method, params = item
            return bool(
                method == "window/logMessage"
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
        await ed.settle()
        assert ed.text(path) == disk(path) == DONE_PLAN
        # The editor did reopen the plan's buffer during the run (the case under test).
        assert any("PLAN.md changed on disk" in q for q in ed.questions), ed.questions
    text = log.read_text()
    assert "on disk only" not in text, text[-3000:]
