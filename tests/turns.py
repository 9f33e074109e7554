"""Scripted-model turns the tests share (no process, no server: unit tests use it too)."""

from __future__ import annotations

from typing import Any

PLAN_TEXT = (
    "# Plan: greet politely\n\n"
    "1. Change the greeting in `hello.py` from `hi` to `hello, world`.\n"
    "2. Run nothing else; the change is one line.\n"
)


def call(name: str, **arguments: Any) -> dict[str, Any]:
    """One tool call of a turn."""
    return {"name": name, "arguments": arguments}


def calls(*tool_calls: dict[str, Any], text: str | None = None) -> dict[str, Any]:
    """A turn that calls tools (after `text`, if any)."""
    turn: dict[str, Any] = {"tool_calls": list(tool_calls)}
    if text is not None:
        turn["text"] = text
    return turn


# The sample project's one-line change (`hello.py`: `print('hi')` → `print('hello, world')`).
GREETING_EDIT = call(
    "edit_file", path="hello.py", old_text="print('hi')", new_text="print('hello, world')"
)


def plan_turns(plan: str = PLAN_TEXT) -> list[dict[str, Any]]:
    """Write the plan, then submit it."""
    return [calls(call("plan_write", content=plan)), calls(call("exit_plan_mode"))]
