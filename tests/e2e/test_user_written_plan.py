"""A plan the user wrote: the model submitted none (status none), the user writes the plan
document in the editor — the lens offers to approve it (asking before each edit), and what
the buffer holds is what is approved and carried out. An empty plan document is never
approvable."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from tests.e2e.scripts import requests_of, scripted_session
from tests.e2e.test_plan_transitions import lens_commands, plan_path

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

USER_PLAN = "# My plan\n\n1. Change the greeting in `hello.py` to `hello`.\n"


async def test_the_user_writes_the_plan_and_approves_it(tmp_path: Path) -> None:
    turns = [{"text": "I will not plan this."}, {"text": "Done as planned."}]
    ws, transcript, cm = scripted_session(tmp_path, turns)
    path = plan_path(ws)
    async with cm as ed:
        await ed.request("planLsp/prompt", {"text": "greet"})
        assert (await ed.state())["planStatus"] == "none"
        ed.open(path, "")
        # An empty plan: nothing offered, nothing approvable.
        assert [c.title for c in await lens_commands(ed, path)] == []
        with pytest.raises(JsonRpcException, match="is empty"):
            await ed.request("planLsp/approvePlan", {"planUri": path.as_uri()})
        ed.type_into(path, USER_PLAN)
        await ed.state()  # the change is processed before this answers
        lenses = await lens_commands(ed, path)
        assert [c.title for c in lenses] == [
            "Not written by the model: read it before you approve",
            "Approve (ask before edits)",
        ]
        approve = lenses[1]
        mark = len(ed.ed.updates)
        state = await ed.command(approve.command, *(approve.arguments or []))
        assert state["planStatus"] == "approved" and state["mode"] == "build"
        assert state["permissionMode"] == "ask"
        assert state["approvedPlan"]["sha256"] == hashlib.sha256(USER_PLAN.encode()).hexdigest()
        done = await ed.wait_update(lambda u: u["kind"] == "done", start=mark)
        assert done["stopReason"] == "end_turn"
    # The Do run was asked to carry out exactly what the buffer held.
    do = [r for r in requests_of(transcript) if r["mode"] == "build"]
    assert len(do) == 1
    assert any(USER_PLAN in (m.get("content") or "") for m in do[0]["messages"])
