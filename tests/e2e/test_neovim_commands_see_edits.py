"""Real Neovim (client-nvim/README.md's no-plugin configuration): the Do run edits hello.py,
open in a buffer, then runs a command that reads it; the command sees the new text, and
the buffer and the file agree afterwards."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.scripts import plan_then_do_turns, requests_of
from tests.e2e.test_neovim import LUA_DIR, VERSIONS, run_nvim
from tests.turns import GREETING_EDIT, calls


@VERSIONS
def test_a_command_of_the_do_run_reads_its_edit(version: str, tmp_path: Path) -> None:
    cat = calls({"name": "bash", "arguments": {"command": "cat hello.py"}})
    turns = [*plan_then_do_turns()[:4], calls(GREETING_EDIT), cat, {"text": "Done."}]
    run = run_nvim(version, LUA_DIR / "minimal_config.lua", turns, tmp_path)
    result = run.result
    assert result["state"]["outcome"] == "completed", result["state"]
    assert result["hello_buffer"] == "print('hello, world')\n"
    assert (run.ws / "hello.py").read_text() == "print('hello, world')\n"
    observed = [
        m["content"] for m in requests_of(run.transcript)[-1]["messages"] if m["role"] == "tool"
    ]
    assert "hello, world" in observed[-1], observed[-1]
