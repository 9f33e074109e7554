"""After a Do run, through the real server: a permission mode chosen at approval applied to
that run only (the one from before is back), and the next request starts in the `after_do`
work mode (default `plan`). While the Do run lasts, the state's `nextRequest` says both."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.scripts import plan_then_do_turns, requests_of, scripted_session

NEXT = {"text": "Noted."}


@pytest.mark.parametrize("after_do", [None, "build"], ids=["default", "build"])
async def test_modes_after_a_do_run(tmp_path: Path, after_do: str | None) -> None:
    options: dict[str, Any] = {"afterDo": after_do} if after_do else {}
    ws, transcript, cm = scripted_session(
        tmp_path, [*plan_then_do_turns(), NEXT], init_options=options
    )
    expected = after_do or "plan"
    async with cm as ed:
        result = await ed.request("planLsp/prompt", {"text": "Make the greeting polite"})
        assert result["stopReason"] == "plan_submitted"
        assert (await ed.state())["permissionMode"] == "ask"
        mark = len(ed.ed.updates)
        approved = await ed.command("planLsp.approvePlan", {"permissionMode": "auto_edit"})
        assert (approved["mode"], approved["permissionMode"]) == ("build", "auto_edit")
        done = await ed.wait_update(lambda u: u["kind"] == "done", start=mark)
        assert done["stopReason"] == "end_turn"
        assert (ws / "hello.py").read_text() == "print('hello, world')\n"
        # While the Do run ran, the state said what the next request would use.
        during = [
            u["state"]
            for u in ed.ed.updates[mark:]
            if u["kind"] == "state" and u["state"]["running"]
        ]
        assert during and all(
            s["nextRequest"] == {"mode": expected, "permissionMode": "ask"} for s in during
        ), during
        state = await ed.state()
        assert (state["mode"], state["permissionMode"]) == (expected, "ask"), state
        assert state.get("nextRequest") is None and state["outcome"] == "completed"
        result = await ed.request("planLsp/prompt", {"text": "what next?"})
        assert result["stopReason"] == "end_turn"
    assert requests_of(transcript)[-1]["mode"] == expected


async def test_a_permission_mode_picked_during_the_run_stays(tmp_path: Path) -> None:
    """The user's own choice while the Do run runs is not undone at its end."""
    turns = plan_then_do_turns()
    turns[4] = {**turns[4], "delay_ms": 400}  # the Do run's edit arrives after the switch
    _ws, _t, cm = scripted_session(tmp_path, turns)
    async with cm as ed:
        await ed.request("planLsp/prompt", {"text": "Make the greeting polite"})
        mark = len(ed.ed.updates)
        await ed.command("planLsp.approvePlan", {"permissionMode": "auto_edit"})
        await ed.wait_update(lambda u: u["kind"] == "state" and u["state"]["running"], start=mark)
        picked = await ed.request("planLsp/setPermissionMode", {"permissionMode": "strict"})
        assert picked["running"], picked
        await ed.wait_update(lambda u: u["kind"] == "done", start=mark)
        state = await ed.state()
        assert (state["mode"], state["permissionMode"]) == ("plan", "strict"), state
