"""Real Vim + coc.nvim (tests/e2e/test_vim_coc.py's set-up) after a Do run of a 2-step plan,
driven by tests/e2e/vim/steps_driver.vim.

The agent's own commands see its edits: step 1 edits hello.py, open in Vim and never saved by
the user, then runs `cat hello.py`; the command's output (the tool result the model gets next)
shows the new text, and Vim has nothing to say about it: `:checktime` afterwards asks nothing
(no W11/W12) and the buffer holds what the file holds.

Revert to before a step, at coc's defaults (no code lenses shown): the user puts the cursor on
step 1 of PLAN.md and opens coc's code-action menu, where the step's lens commands are, picking
"Revert to before this step": hello.py's file and buffer
hold the original text, unmodified, `:checktime` asks nothing, the steps are reverted, and
the plan's first line no longer says done."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from tests.e2e.scripts import last_tool_results, sample_project, write_script
from tests.e2e.test_vim_coc import APPROVE, QUESTIONS, STEP_TIMEOUT_S, VIM_DIR, launch_vim
from tests.turns import GREETING_EDIT, call, calls

HELLO_BEFORE = "print('hi')\n"
HELLO_AFTER = "print('hello, world')\n"
PLAN = (
    "# Plan: greet politely\n\n"
    "1. Change the greeting in `hello.py` to `hello, world` and show the file.\n"
    "2. Add `notes.txt` with one line.\n"
)
STEPS = ("Change the greeting in hello.py and show it", "Add notes.txt with one line")
REVERT = "Revert to before this step"


def todos(*statuses: str) -> dict[str, Any]:
    items = [{"content": c, "status": s} for c, s in zip(STEPS, statuses, strict=True)]
    return calls(call("todo_write", todos=items))


def steps_turns() -> list[dict[str, Any]]:
    """The plan, then a Do run: step 1 edits hello.py and reads it with a command; step 2
    writes notes.txt."""
    return [
        calls(call("plan_write", content=PLAN)),
        calls(call("exit_plan_mode")),
        todos("in_progress", "pending"),
        calls(GREETING_EDIT),
        calls(call("bash", command="cat hello.py")),
        todos("completed", "in_progress"),
        calls(call("write_file", path="notes.txt", content="one\n")),
        todos("completed", "completed"),
        {"text": "Done."},
    ]


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp_path = tmp_path_factory.mktemp("vim-steps")
    ws = sample_project(tmp_path / "ws")
    subprocess.run(["git", "init", "-q", str(ws)], check=True, timeout=30)
    script = write_script(tmp_path / "script.json", steps_turns())
    params = {
        "plan_path": str(ws / ".plan-lsp" / "plans" / "PLAN.md"),
        "hello_path": str(ws / "hello.py"),
        "prompt": "Make the greeting polite",
        "approve_title": APPROVE,
        "revert_title": REVERT,
        "hello_before": HELLO_BEFORE,
        "step_timeout_s": STEP_TIMEOUT_S,
    }
    result = launch_vim(tmp_path, ws, script, VIM_DIR / "steps_driver.vim", params)
    result["_ws"] = ws
    return result


def stopped_early(result: dict[str, Any]) -> str:
    done = {k: v for k, v in result.items() if not k.startswith("_")}
    return f"the session stopped early: {result.get('error')}\n{done}\n{result['_diagnostics']}"


def questions(result: dict[str, Any]) -> list[str]:
    """What Vim said about a changed file: warnings, :messages, the screens."""
    said = [f"{when}: {text}" for when, text in result.get("warnings", []) if text]
    said += [m for m in result.get("messages", []) if QUESTIONS.search(m)]
    said += [s for s in result["_screens"] if QUESTIONS.search(s)]
    return said


def test_the_agents_command_sees_its_edit_and_vim_asks_nothing(session: dict[str, Any]) -> None:
    result = session
    assert result.get("ok") is True, stopped_early(result)
    assert result["state_after_do"]["outcome"] == "completed", result["state_after_do"]
    # The command read the edit that was only in Vim's buffer.
    tool_results = last_tool_results(result["_transcript"])
    cat = [t for t in tool_results if "print(" in t]
    assert cat and "hello, world" in cat[0], tool_results
    assert result["hello_buffer_after_do"] == HELLO_AFTER
    assert result["hello_disk_after_do"] == HELLO_AFTER
    asked = questions(result)
    assert not asked, "Vim asked about a changed file:\n" + "\n".join(asked)
    # After :checktime the buffer is what the file holds, and nothing is left to save.
    assert not result["checktime after do_modified"], result["_diagnostics"]


def test_revert_to_before_a_step_from_its_lens(session: dict[str, Any]) -> None:
    result = session
    assert result.get("ok") is True, stopped_early(result)
    assert any(REVERT in line for m in result["menus"] for line in m["lines"]), result["menus"]
    assert result["hello_buffer_reverted"] == HELLO_BEFORE
    assert result["hello_disk_reverted"] == HELLO_BEFORE
    assert (result["_ws"] / "hello.py").read_text() == HELLO_BEFORE
    assert not (result["_ws"] / "notes.txt").exists()
    assert not result["hello_modified_reverted"], "hello.py is left modified after the revert"
    assert not result["checktime after revert_modified"]
    steps = result["steps_after_revert"]["steps"]
    assert [s["state"] for s in steps] == ["reverted", "reverted"], steps
    # The server's lenses on the plan's first line say it is carried out partly; its code
    # actions there offer "Run the rest" (none while the plan was done).
    top = result["top_lenses"]
    assert any(t.startswith("Plan approved ✓ — carried out partly") for t in top), top
    assert not any("done" in t.lower() and "partly" not in t for t in top), top
    assert "Run the rest" in result["top_actions"], result["top_actions"]
    asked = questions(result)
    assert not asked, "Vim asked about a changed file:\n" + "\n".join(asked)
