"""Commenting on a plan's lines in Neovim with the client-nvim plugin, through the real server
(tests/e2e/nvim/comment_session.lua), plans streamed at a model's speed: the code action
"Comment on these lines…" asks for the comment (vim.ui.input, nothing typed into the buffer),
the comment shows as a `plan review` diagnostic on its line, :PlanSendComments sends it with
the quoted line, the revision streams into the buffer and the comment is then addressed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.model_speed import LONG_PLAN, LONG_REVISED_PLAN, stream_report
from tests.e2e.scripts import requests_of
from tests.e2e.test_neovim import LUA_DIR, VERSIONS, run_nvim

COMMENT = "say which files stay as they are"
LINE = "Nothing else changes."  # LONG_PLAN's closing line; the revision rewrites it
ACTION = "Comment on these lines…"
RANGE_COMMENT = "merge these two steps"


def turns() -> list[dict[str, Any]]:
    def plan(text: str) -> list[dict[str, Any]]:
        return [
            {"tool_calls": [{"name": "plan_write", "arguments": {"content": text}}]},
            {"tool_calls": [{"name": "exit_plan_mode", "arguments": {}}]},
        ]

    return plan(LONG_PLAN) + plan(LONG_REVISED_PLAN)


@VERSIONS
def test_comment_from_the_code_action_is_sent_and_addressed(
    version: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wanted = {"comment": COMMENT, "comment_line": LINE, "comment_action": ACTION,
              "range_comment": RANGE_COMMENT}  # fmt: skip
    monkeypatch.setenv("PLAN_LSP_E2E_COMMENT", json.dumps(wanted))
    run = run_nvim(
        version,
        LUA_DIR / "comment_session.lua",
        turns(),
        tmp_path,
        paced=True,
        plans=(LONG_PLAN, LONG_REVISED_PLAN),
    )
    result = run.result
    assert result["plan_run"]["stopReason"] == "plan_submitted"
    # the action asked for the comment; the buffer got no `> comment:` line
    assert ACTION in result["action_titles"]
    assert result["inputs"][0] == f"plan-lsp: comment on line {result['comment_lnum'] + 1}: "
    assert result["plan_after_comment"] == LONG_PLAN
    assert not result["unexpected_prompts"], result["unexpected_prompts"]
    line = LONG_PLAN.splitlines().index(LINE)
    assert result["comment_lnum"] == line
    shown = [d for d in result["diagnostics_open"] if COMMENT in d["message"]]
    assert [(d["lnum"], d["message"]) for d in shown] == [(line, f"Comment: {COMMENT}")]
    listed = result["comments_open"]["comments"]
    assert [(c["status"], c["quote"], c["text"]) for c in listed] == [("open", LINE, COMMENT)]

    # the revision request carried the comment with its quoted line
    requests = requests_of(run.transcript)
    assert len(requests) == 4  # the plan (2), the revision (2)
    opening = json.dumps(requests[2]["messages"], ensure_ascii=False)
    assert COMMENT in opening and f"> {LINE}" in opening, opening[-2000:]
    assert result["revision_run"]["stopReason"] == "plan_submitted"
    assert result["plan_buffer_v2"] == LONG_REVISED_PLAN

    # the revised plan grew visibly in the buffer while the model streamed it
    assert run.timeline is not None
    events = [(float(t), str(text)) for t, text in result["buffer_events"]]
    report = stream_report(events, run.timeline, run.script)
    assert report.never_shown[LONG_REVISED_PLAN[:40]] == 0, report
    assert report.growing_states[LONG_REVISED_PLAN[:40]] >= 5, report

    # the revision changed the line: the comment is addressed, and its diagnostic says so
    after = result["comments_after"]["comments"]
    assert [(c["status"], c["sent"], c["text"]) for c in after] == [("addressed", True, COMMENT)]
    revised_line = LONG_REVISED_PLAN.splitlines().index(
        "Nothing else changes: every other file stays as it is."
    )
    assert after[0]["range"]["start"]["line"] == revised_line
    addressed = [d for d in result["diagnostics_after"] if COMMENT in d["message"]]
    assert [(d["lnum"], d["message"]) for d in addressed] == [
        (revised_line, f"Comment (addressed): {COMMENT}")
    ]
    assert result["state_after"]["planStatus"] == "submitted"

    # :[range]PlanComment on steps 1 and 2 of the revision asked, and kept it on those lines
    first = result["range_first"]
    assert result["inputs"][1] == f"plan-lsp: comment on lines {first + 1}-{first + 2}: "
    kept = [c for c in result["comments_range"]["comments"] if c["text"] == RANGE_COMMENT]
    assert [
        (c["status"], c["range"]["start"]["line"], c["range"]["end"]["line"]) for c in kept
    ] == [("open", first, first + 1)]
    steps = LONG_REVISED_PLAN.splitlines()[first : first + 2]
    assert kept[0]["quote"] == "\n".join(steps) and steps[0].startswith("1. ")
