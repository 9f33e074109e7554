"""Through the real server, build mode, yolo: a model writing a git hook gets a permission
request carrying the warning (yolo never prompts otherwise); answered no, the hook is not
written and the model reads why. A client without permission requests gets the standard
message request, with the same warning."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e.scripts import requests_of, scripted_session

HOOK = ".git/hooks/pre-commit"
WARNING = "git runs these hooks by itself"


def _turns() -> list[dict[str, Any]]:
    call = {"name": "write_file", "arguments": {"path": HOOK, "content": "#!/bin/sh\nevil\n"}}
    return [{"tool_calls": [call]}, {"text": "done"}]


async def test_yolo_asks_before_writing_a_git_hook_and_a_no_keeps_it_absent(
    tmp_path: Path,
) -> None:
    ws, transcript, cm = scripted_session(tmp_path, _turns(), permission_requests=True)
    (ws / ".git" / "hooks").mkdir(parents=True)
    async with cm as ed:
        await ed.request("planLsp/setMode", {"mode": "build"})
        await ed.request("planLsp/setPermissionMode", {"permissionMode": "yolo"})
        ed.ed.answer_permission = lambda p: "reject_once"
        result = await ed.request("planLsp/prompt", {"text": "set up hooks"}, timeout=120)
        assert result["stopReason"] == "end_turn"
        (request,) = ed.ed.permission_requests
        assert request["arguments"]["path"] == HOOK
        assert WARNING in request["summary"]
    assert not (ws / HOOK).exists()
    observation = next(m for m in requests_of(transcript)[1]["messages"] if m["role"] == "tool")
    assert "declined" in observation["content"] and WARNING in observation["content"]


async def test_a_client_without_permission_requests_gets_the_warning_in_a_message(
    tmp_path: Path,
) -> None:
    ws, _transcript, cm = scripted_session(tmp_path, _turns())
    (ws / ".git" / "hooks").mkdir(parents=True)
    asked: list[str] = []

    def answer(p: Any) -> str | None:
        asked.append(p.message)
        return None  # dismissed: a no

    async with cm as ed:
        await ed.request("planLsp/setMode", {"mode": "build"})
        await ed.request("planLsp/setPermissionMode", {"permissionMode": "yolo"})
        ed.ed.answer_message = answer
        await ed.request("planLsp/prompt", {"text": "set up hooks"}, timeout=120)
    assert len(asked) == 1 and WARNING in asked[0] and HOOK in asked[0]
    assert not (ws / HOOK).exists()


async def test_build_mode_shell_in_yolo_asks_when_named_and_is_read_only_when_hidden(
    tmp_path: Path,
) -> None:
    from plan_lsp.policy.sandbox.bwrap import bwrap_path
    from tests.needs import need

    need(bwrap_path() is not None, "bubblewrap is not installed")
    hook = ".git/hooks/post-checkout"
    # `.git/hooks` in base64: the name is not among the command's words.
    hidden = "h=$(echo LmdpdC9ob29rcw== | base64 -d); echo evil > $h/post-checkout"
    turns = [
        {"tool_calls": [{"name": "bash", "arguments": {"command": f"echo evil > {hook}"}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": hidden}}]},
        {"text": "done"},
    ]
    ws, transcript, cm = scripted_session(tmp_path, turns, permission_requests=True)
    (ws / ".git" / "hooks").mkdir(parents=True)
    async with cm as ed:
        await ed.request("planLsp/setMode", {"mode": "build"})
        await ed.request("planLsp/setPermissionMode", {"permissionMode": "yolo"})
        ed.ed.answer_permission = lambda p: "reject_once"
        await ed.request("planLsp/prompt", {"text": "install a hook"}, timeout=120)
        # Named: asked (and refused); hidden from the words: not asked, but read-only.
        (request,) = ed.ed.permission_requests
        assert hook in request["summary"] and WARNING in request["summary"]
    assert not (ws / hook).exists()
    observations = [m for m in requests_of(transcript)[2]["messages"] if m["role"] == "tool"]
    assert "Read-only file system" in observations[-1]["content"]
