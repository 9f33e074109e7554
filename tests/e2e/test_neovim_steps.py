"""The approved plan's steps in Neovim with the client-nvim plugin, through the real server
(tests/e2e/nvim/steps_session.lua): after a 3-step Do run, :PlanSteps lists each step with
its files, :PlanRevert 3 brings the workspace back to before step 3 — the open buffer of the
file it changed follows, unmodified — :PlanRedo brings step 3 back, and the lens *Revert to
before this step* on step 3 reverts it again."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.test_neovim import LUA_DIR, VERSIONS, run_nvim
from tests.e2e.test_step_mode import PLAN, TURNS


@VERSIONS
def test_steps_revert_and_redo_from_commands(version: str, tmp_path: Path) -> None:
    run = run_nvim(version, LUA_DIR / "steps_session.lua", TURNS, tmp_path, plans=(PLAN, PLAN))
    result = run.result
    assert result["do_run"] == "end_turn", result
    assert (
        "1. [done] Change the greeting in `hello.py` to `hello`. — hello.py +1 -1"
        in (result["listed"])
    ), result["listed"]
    assert "3. [done] Add a second line to `notes.txt`. — notes.txt +1 -0" in result["listed"]
    assert result["notes_buffer_before"] == "one\ntwo"
    assert "reverted; steps 3; restored notes.txt" in result["reverted"], result
    assert result["notes_disk_reverted"] == "one" == result["notes_buffer_reverted"], result
    assert not result["notes_modified_reverted"]
    assert "2. [done]" in result["steps_reverted"] and "3. [reverted]" in result["steps_reverted"]
    assert "redone; steps 3; restored notes.txt" in result["redone"], result["redone"]
    assert result["notes_buffer_redone"] == "one\ntwo"
    assert "reverted; steps 3; restored notes.txt" in result["lens_reverted"], result
    assert result["notes_disk_lens"] == "one" == result["notes_buffer_lens"], result
    assert not result["notes_modified_lens"]
    assert (run.ws / "notes.txt").read_text() == "one\n"
