"""Rejecting a plan from its code lens in Neovim with the client-nvim plugin, through the real
server (tests/e2e/nvim/reject_session.lua): Reject… asks for feedback (vim.ui.input),
Escape does nothing, an empty answer rejects without feedback, the rejected plan's lens
offers Approve and Revise…, and Revise… with feedback starts the revision run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e.scripts import PLAN_TEXT, requests_of
from tests.e2e.test_neovim import FEEDBACK, LUA_DIR, REVISED_PLAN, VERSIONS, run_nvim


def turns() -> list[dict[str, Any]]:
    def plan(text: str) -> list[dict[str, Any]]:
        return [
            {"tool_calls": [{"name": "plan_write", "arguments": {"content": text}}]},
            {"tool_calls": [{"name": "exit_plan_mode", "arguments": {}}]},
        ]

    return plan(PLAN_TEXT) + plan(REVISED_PLAN)


@VERSIONS
def test_reject_and_revise_from_the_lens_ask_for_feedback(version: str, tmp_path: Path) -> None:
    run = run_nvim(version, LUA_DIR / "reject_session.lua", turns(), tmp_path)
    result = run.result
    assert result["status_after_escape"] == "submitted"
    assert len(result["inputs"]) == 3 and "reject the plan" in result["inputs"][0]
    assert "revise the plan" in result["inputs"][2]
    assert result["running_after_reject"] is False
    titles = result["titles_rejected"]
    assert "Approve (auto-accept edits)" in titles and "Revise…" in titles, titles
    assert not any("waiting for a revised plan" in t for t in titles), titles
    assert result["plan_run"]["stopReason"] == "plan_submitted"
    assert result["revision_run"]["stopReason"] == "plan_submitted"
    assert result["status_after_revision"] == "submitted"
    requests = requests_of(run.transcript)
    assert len(requests) == 4  # the plan (2), no run for the rejection, the revision (2)
    assert any(FEEDBACK in str(m.get("content")) for m in requests[2]["messages"])
