"""Scripted-provider sessions shared by end-to-end tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PLAN_TEXT = (
    "# Plan: greet politely\n\n"
    "1. Change the greeting in `hello.py` from `hi` to `hello, world`.\n"
    "2. Run nothing else; the change is one line.\n"
)


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
        {
            "tool_calls": [
                {
                    "name": "edit_file",
                    "arguments": {
                        "path": "hello.py",
                        "old_text": "print('hi')",
                        "new_text": "print('hello, world')",
                    },
                }
            ]
        },
        {"text": "Done: the greeting is updated."},
    ]


def sample_project(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "hello.py").write_text("print('hi')\n")
    (root / "README.md").write_text("# sample\n")
    return root
