"""The session core's updates (`planLsp/update` payloads) as ACP `session/update`s: pure
functions, so every front-end change is a table test. Tool calls keep the model's call id;
edits get a `diff` from the file's text before the call and after it (read by the
front-end, never recomputed here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from acp import helpers, schema

from plan_lsp.session import WorkMode

# Work modes as ACP session modes (and the `mode` config option's values).
MODES: list[tuple[str, str, str]] = [
    (
        WorkMode.PLAN.value,
        "Plan",
        "Research with read-only tools and write a plan for your approval; nothing changes.",
    ),
    (
        WorkMode.BUILD.value,
        "Build",
        "Change the workspace, following the approved plan (edits as the permission mode says).",
    ),
]
MODE_OPTION_ID = "mode"

TOOL_KINDS: dict[str, schema.ToolKind] = {
    "read_file": "read",
    "list_dir": "read",
    "glob": "search",
    "grep": "search",
    "edit_file": "edit",
    "write_file": "edit",
    "plan_write": "edit",
    "bash": "execute",
    "exit_plan_mode": "switch_mode",
    "enter_plan_mode": "switch_mode",
    "todo_write": "think",
    "task": "think",
}
# Tools whose call changes one file's text (a diff is shown for them).
EDIT_TOOLS = frozenset({"edit_file", "write_file", "plan_write"})

TODO_STATUS: dict[str, schema.PlanEntryStatus] = {
    "pending": "pending",
    "in_progress": "in_progress",
    "completed": "completed",
}


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def mode_state(mode: str) -> schema.SessionModeState:
    return schema.SessionModeState(
        current_mode_id=mode,
        available_modes=[
            schema.SessionMode(id=mid, name=name, description=description)
            for mid, name, description in MODES
        ],
    )


def config_options(
    mode: str,
) -> list[schema.SessionConfigOptionSelect | schema.SessionConfigOptionBoolean]:
    return [
        schema.SessionConfigOptionSelect(
            id=MODE_OPTION_ID,
            name="Mode",
            description="Plan first, then build what you approved.",
            category="mode",
            type="select",
            current_value=mode,
            options=[
                schema.SessionConfigSelectOption(value=mid, name=name, description=description)
                for mid, name, description in MODES
            ],
        )
    ]


def arguments_of(payload: dict[str, Any]) -> dict[str, Any]:
    """A tool call's arguments as an object (the model's JSON text; {} when it is not one)."""
    raw = payload.get("arguments")
    if not isinstance(raw, str) or not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def call_path(root: Path, tool: str, arguments: dict[str, Any]) -> Path | None:
    """The file a call names (absolute, not resolved through links), if any."""
    raw = arguments.get("path") or arguments.get("plan_filename")
    if tool == "plan_write" and not raw:
        return None
    if not isinstance(raw, str) or not raw or "\x00" in raw:
        return None
    path = Path(raw)
    return path if path.is_absolute() else root / path


def call_title(tool: str, arguments: dict[str, Any]) -> str:
    if tool == "bash":
        return f"Run `{str(arguments.get('command', ''))[:200]}`"
    for key in ("path", "pattern", "description"):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            return f"{tool} {value[:200]}"
    return tool


def tool_call_start(payload: dict[str, Any], root: Path) -> schema.ToolCallStart:
    tool = str(payload.get("tool", ""))
    call_id = str(payload.get("toolCallId") or tool)
    arguments = arguments_of(payload)
    path = call_path(root, tool, arguments)
    return helpers.start_tool_call(
        call_id,
        call_title(tool, arguments),
        kind=TOOL_KINDS.get(tool, "other"),
        status="in_progress",
        locations=[schema.ToolCallLocation(path=str(path))] if path is not None else None,
        raw_input=arguments or None,
    )


def text_content(text: str) -> schema.ContentToolCallContent:
    return helpers.tool_content(helpers.text_block(text))


def tool_result(
    payload: dict[str, Any], diff: tuple[Path, str | None, str] | None = None
) -> schema.ToolCallProgress:
    failed = bool(payload.get("isError"))
    content: list[Any] = []
    if diff is not None and not failed:
        path, before, after = diff
        content.append(helpers.tool_diff_content(str(path), after, before))
    text = str(payload.get("content", ""))
    omitted = payload.get("omitted")
    if isinstance(omitted, int) and omitted > 0:
        text += f"\n… {omitted:,} more characters (the model read them; not shown)"
    content.append(text_content(text))
    return helpers.update_tool_call(
        str(payload.get("toolCallId")),
        status="failed" if failed else "completed",
        content=content,
    )


def blocked(payload: dict[str, Any]) -> schema.ToolCallProgress:
    reason = f"Refused ({payload.get('error')}): {payload.get('reason', '')}"
    return helpers.update_tool_call(
        str(payload.get("toolCallId")), status="failed", content=[text_content(reason)]
    )


def plan_entries(todos: list[dict[str, Any]]) -> schema.AgentPlanUpdate:
    """The whole todo list as ACP plan entries (ACP replaces the plan with each update)."""
    return helpers.update_plan(
        helpers.plan_entry(
            str(t.get("content", "")),
            status=TODO_STATUS.get(str(t.get("status")), "pending"),
        )
        for t in todos
    )


def usage(state: dict[str, Any]) -> schema.UsageUpdate | None:
    used = _dict(_dict(state).get("usage"))
    size = _int(used.get("contextWindow"))
    if size <= 0:
        return None
    raw = used.get("costUsd")
    cost = float(raw) if isinstance(raw, int | float) and not isinstance(raw, bool) else None
    return schema.UsageUpdate(
        session_update="usage_update",
        used=max(0, _int(used.get("contextTokens"))),
        size=size,
        cost=schema.Cost(amount=cost, currency="USD") if cost is not None else None,
    )


def mode_changed(mode: str) -> list[Any]:
    return [
        helpers.update_current_mode(mode),
        schema.ConfigOptionUpdate(
            session_update="config_option_update", config_options=config_options(mode)
        ),
    ]


def updates_for(payload: dict[str, Any], root: Path, *, replay: bool = False) -> list[Any]:
    """The ACP updates one core update becomes (tool results with diffs are the front-end's:
    it knows the file's text before the call)."""
    kind = payload.get("kind")
    if kind == "text":
        delta = str(payload.get("delta", ""))
        return [helpers.update_agent_message_text(delta)] if delta else []
    if kind == "toolCall":
        if payload.get("subagent"):
            # The `task` call's own card is the subagent's: its result ends it.
            label = payload.get("description") or "a task"
            return [helpers.update_agent_thought_text(f"Subagent started: {label}.")]
        return [tool_call_start(payload, root)]
    if kind == "toolResult":
        return [tool_result(payload)]
    if kind == "blocked":
        return [blocked(payload)]
    if kind == "todos":
        return [plan_entries(_dicts(payload.get("todos")))]
    if kind == "modeChanged":
        mode = payload.get("mode")
        return mode_changed(mode) if mode in (WorkMode.PLAN.value, WorkMode.BUILD.value) else []
    if kind == "state":
        found = usage(_dict(payload.get("state")))
        return [found] if found is not None else []
    if kind == "error":
        return [helpers.update_agent_message_text(f"\n\nError: {payload.get('message', '')}\n")]
    if kind == "deviation":
        return [helpers.update_agent_message_text(f"\n\nNote: {payload.get('message', '')}\n")]
    if kind == "cancelledCalls":
        reason = str(payload.get("reason", ""))
        return [
            helpers.update_tool_call(
                str(call.get("callId") or call.get("tool")),
                status="failed",
                content=[text_content(f"Stopped: {reason}")],
            )
            for call in _dicts(payload.get("calls"))
        ]
    if kind == "compaction":
        return [
            helpers.update_agent_thought_text(
                f"Compacted the conversation ({payload.get('tokensBefore')} → "
                f"{payload.get('tokensAfter')} tokens)."
            )
        ]
    if kind == "permission" and replay and payload.get("decision"):
        answer = str(payload.get("decision")).replace("_", " ")
        return [
            helpers.update_agent_thought_text(
                f"Permission for {payload.get('tool')} ({payload.get('summary', '')}): {answer}."
            )
        ]
    if kind == "prompt" and replay:
        text = str(payload.get("text", ""))
        if payload.get("origin") == "prompt":
            return [helpers.update_user_message_text(text)]
        return [helpers.update_agent_thought_text(text)]
    return []
