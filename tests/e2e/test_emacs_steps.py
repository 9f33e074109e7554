"""Real Emacs with eglot and with lsp-mode (tests/e2e/test_emacs.py's set-up) after a Do run of
a 2-step plan, driven by tests/e2e/emacs/steps-session.el.

The agent's own commands see its edits: step 1 edits hello.py, open in Emacs, then runs
`cat hello.py`; the command's output (the tool result the model gets next) shows the new text,
and Emacs asks nothing (no "changed on disk; really edit the buffer?"): hello.py's buffer is
what its file holds, saved, with the file's time.

Revert to before a step from its lens: on step 1 of PLAN.md, "Revert to before this step"
(lsp-mode: the lens clicked; eglot 1.9 shows no lenses: the lens's command run as eglot runs a
server command). hello.py's file and buffer hold the original text, the buffer saved and
current, Emacs asked nothing, the steps are reverted and the plan's first line no longer says
done. Saving hello.py afterwards (C-x C-s) asks nothing either."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from tests.e2e.scripts import last_tool_results, sample_project, write_script
from tests.e2e.test_emacs import APPROVE, CLIENTS, EMACS_DIR, launch_emacs
from tests.e2e.test_vim_steps import HELLO_AFTER, HELLO_BEFORE, PLAN, REVERT, steps_turns


@pytest.fixture(scope="module", params=sorted(CLIENTS))
def session(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    client = request.param
    tmp_path = tmp_path_factory.mktemp("emacs-steps")
    ws = sample_project(tmp_path / "ws")
    subprocess.run(["git", "init", "-q", str(ws)], check=True, timeout=30)
    plan = ws / ".plan-lsp" / "plans" / "PLAN.md"
    plan.parent.mkdir(parents=True)
    plan.write_text("")
    script = write_script(tmp_path / "script.json", steps_turns())
    params = {
        "session": "e2e-steps-session",
        "prompt": "Make the greeting polite",
        "plan": PLAN,
        "approve_title": APPROVE,
        "revert_title": REVERT,
        "hello_before": HELLO_BEFORE,
        "hello_after": HELLO_AFTER,
    }
    result = launch_emacs(client, tmp_path, ws, script, params, EMACS_DIR / "steps-session.el")
    result["_ws"] = ws
    result["_client"] = client
    return result


def asked(result: dict[str, Any]) -> str:
    return f"{result['_client']}: Emacs asked {result.get('prompts')}\n{result['_diagnostics']}"


def stopped_early(result: dict[str, Any]) -> str:
    seen = {k: v for k, v in result.items() if not k.startswith("_") and k != "buffer_events"}
    return f"{result['_client']}: the session stopped early: {seen}\n{result['_diagnostics']}"


def saved(state: dict[str, Any], text: str) -> bool:
    """The buffer and the file hold `text`; the buffer is saved and knows the file's time."""
    seen = [state.get(k) for k in ("buffer", "disk", "modified", "modtime_ok")]
    return seen == [text, text, False, True]


def test_the_agents_command_sees_its_edit_and_emacs_asks_nothing(session: Any) -> None:
    result = session
    assert result.get("ok") is True, stopped_early(result)
    assert result["state_after_do"]["outcome"] == "completed", result["state_after_do"]
    tool_results = last_tool_results(result["_transcript"])
    cat = [t for t in tool_results if "print(" in t]
    assert cat and "hello, world" in cat[0], tool_results
    assert saved(result["hello_after_do"], HELLO_AFTER), result["hello_after_do"]
    assert not result.get("prompts"), asked(result)


def test_revert_to_before_a_step_from_its_lens(session: Any) -> None:
    result = session
    assert result.get("ok") is True, stopped_early(result)
    assert REVERT in result["step_lenses"], result["step_lenses"]
    assert saved(result["hello_reverted"], HELLO_BEFORE), result["hello_reverted"]
    assert (result["_ws"] / "hello.py").read_text() == HELLO_BEFORE
    assert not (result["_ws"] / "notes.txt").exists()
    assert result["steps_reverted"] == ["reverted", "reverted"], result["steps_reverted"]
    top = result["top_lenses"]
    assert any(t.startswith("Plan approved ✓ — carried out partly") for t in top), top
    assert not any("done" in t.lower() and "partly" not in t for t in top), top
    after = result["after_save"]["hello.py"]
    assert after["buffer"] == after["disk"] == HELLO_BEFORE and after["modified"] is False, after
    assert not result.get("prompts"), asked(result)
