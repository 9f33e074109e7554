"""Scripted-provider sessions shared by end-to-end tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.turns import GREETING_EDIT, PLAN_TEXT, calls

__all__ = ["PLAN_TEXT"]


def write_script(path: Path, turns: list[dict[str, Any]], chunk: int = 16) -> Path:
    path.write_text(json.dumps({"chunk": chunk, "turns": turns}))
    return path


def plan_then_do_turns(plan_text: str = PLAN_TEXT) -> list[dict[str, Any]]:
    return [
        {
            "text": "Reading first.",
            "tool_calls": [{"name": "read_file", "arguments": {"path": "hello.py"}}],
        },
        {
            "text": "Let me just fix it now.",
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "hello.py", "content": "oops"}},
                {"name": "bash", "arguments": {"command": "rm -rf ."}},
            ],
        },
        {"tool_calls": [{"name": "plan_write", "arguments": {"content": plan_text}}]},
        {"tool_calls": [{"name": "exit_plan_mode", "arguments": {}}]},
        # Do run
        calls(GREETING_EDIT),
        {"text": "Done: the greeting is updated."},
    ]


def sample_project(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "hello.py").write_text("print('hi')\n")
    (root / "README.md").write_text("# sample\n")
    return root


def scripted_args(script: Path, transcript: Path | None = None) -> list[str]:
    """Server arguments for an offline session on `script` (recording every model request
    when `transcript` is given); the shell protection is pinned to the classifier so tests
    behave the same with or without a sandbox on the machine."""
    args = ["--provider", "scripted", "--script", str(script), "--plan-shell", "classified"]
    return [*args, "--transcript", str(transcript)] if transcript is not None else args


def scripted_session(
    tmp_path: Path, turns: list[dict[str, Any]], *args: str, **kw: Any
) -> tuple[Path, Path, Any]:
    """A sample workspace, and a not-yet-started server on `turns` (an async context manager)."""
    from tests.lsp_harness import running_server

    ws = sample_project(tmp_path / "ws")
    script = write_script(tmp_path / "script.json", turns)
    transcript = tmp_path / "t.jsonl"
    return ws, transcript, running_server([ws], *scripted_args(script, transcript), *args, **kw)


def requests_of(transcript: Path) -> list[dict[str, Any]]:
    """The model requests a transcript recorded, in order."""
    return [json.loads(line) for line in transcript.read_text().splitlines()]


def last_tool_results(transcript: Path) -> list[str]:
    """The tool results the model was given in its last request."""
    last = requests_of(transcript)[-1]["messages"]
    return [str(m["content"]) for m in last if m["role"] == "tool"]
