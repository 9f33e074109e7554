"""The session core's updates (the contract's `Update` values) as ACP `session/update`s,
the one place an update walks through ACP: pure functions, so every change is a table test,
and `Walk`, one session's memory between updates. Tool calls keep the model's call id;
edits get a `diff` from the file's text before the call and after it (read from the disk
around the call, never recomputed here)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from acp import helpers, schema

from plan_lsp.core.workspaces import ClientMcpServer
from plan_lsp.policy.safe_fs import disk_text
from plan_lsp.protocol import updates as u
from plan_lsp.protocol.state import SessionState, Todo, WorkMode

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


def client_mcp(servers: list[Any]) -> list[ClientMcpServer]:
    """`session/new.mcpServers` in the config's terms (`Workspaces.client_mcp`): stdio ones
    run as configured servers do; a tool of theirs runs in plan mode only when the client
    lists it in `_meta.planLsp.readOnlyTools` (the server's own hints are never believed)."""
    entries: list[ClientMcpServer] = []
    for server in servers:
        name = re.sub(r"[^A-Za-z0-9-]+", "-", server.name).strip("-")[:24] or "client"
        if not isinstance(server, schema.McpServerStdio):
            kind = getattr(server, "type", "remote")
            why = f"{kind} MCP servers are not supported; plan-lsp starts local programs (stdio)"
            entries.append(ClientMcpServer(name=name, refused=why))
            continue
        own = ((server.field_meta or {}).get("planLsp") or {}).get("readOnlyTools")
        tools = [t for t in own if isinstance(t, str)] if isinstance(own, list) else []
        command = [server.command, *server.args]
        env = {v.name: v.value for v in server.env}
        entries.append(ClientMcpServer(name=name, command=command, env=env, read_only_tools=tools))
    return entries


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


def arguments_of(call: u.ToolCallUpdate) -> dict[str, Any]:
    """A tool call's arguments as an object (the model's JSON text; {} when it is not one)."""
    raw = call.arguments
    if not raw:
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


# What a person reads on a tool call's card ({}: the path or pattern it names).
TITLES: dict[str, str] = {
    "read_file": "Read {}",
    "list_dir": "List {}",
    "edit_file": "Edit {}",
    "write_file": "Write {}",
    "grep": "Search for `{}`",
    "glob": "Find files `{}`",
    "plan_write": "Write the plan",
    "exit_plan_mode": "Submit the plan for approval",
    "enter_plan_mode": "Switch to plan mode",
    "todo_write": "Update the checklist",
}


def shown_path(root: Path, raw: str) -> str:
    """A path as the user reads it: relative to the folder when it is inside it."""
    path = Path(raw)
    return str(path.relative_to(root)) if path.is_relative_to(root) else raw


def call_title(tool: str, arguments: dict[str, Any], root: Path) -> str:
    """The call in words: "Edit src/app.py", "Run `git log -1`", "Search for `TODO`"."""
    if tool == "bash":
        return f"Run `{str(arguments.get('command', ''))[:200]}`"
    if tool.startswith("mcp__"):  # an MCP tool: "git: git_status"
        server, _, name = tool.removeprefix("mcp__").partition("__")
        tool = f"{server}: {name}"
    named = arguments.get("pattern" if tool in ("grep", "glob") else "path")
    if tool in TITLES:
        named = shown_path(root, named) if isinstance(named, str) and named else "the folder"
        return TITLES[tool].format(named[:200])
    for key in ("path", "pattern", "description"):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            return f"{tool} {value[:200]}"
    return tool


def tool_call_start(call: u.ToolCallUpdate, root: Path) -> schema.ToolCallStart:
    tool = call.tool
    call_id = call.toolCallId or tool
    arguments = arguments_of(call)
    path = call_path(root, tool, arguments)
    return schema.ToolCallStart(
        session_update="tool_call",
        tool_call_id=call_id,
        title=call_title(tool, arguments, root),
        kind=TOOL_KINDS.get(tool, "other"),
        status="in_progress",
        locations=[schema.ToolCallLocation(path=str(path))] if path is not None else None,
        raw_input=arguments or None,
        field_meta={"planLsp": {"tool": tool}},  # the tool's name, for clients that want it
    )


def text_content(text: str) -> schema.ContentToolCallContent:
    return helpers.tool_content(helpers.text_block(text))


REFUSAL_WORDS = {"tool_not_allowed": "Refused", "permission_denied": "Denied"}


def refusal_text(content: str) -> str | None:
    """A refusal observation (`{"error": "tool_not_allowed", "reason": …}`) in words:
    "Refused: <reason>" / "Denied: <reason>"; None for any other result."""
    if not content.startswith("{"):
        return None
    try:
        value = json.loads(content)
    except ValueError:
        return None
    if not isinstance(value, dict) or value.get("error") not in REFUSAL_WORDS:
        return None
    reason = value.get("reason") or value.get("message") or "no reason given"
    return f"{REFUSAL_WORDS[value['error']]}: {reason}"


def tool_result(
    result: u.ToolResultUpdate, diff: tuple[Path, str | None, str] | None = None
) -> schema.ToolCallProgress:
    content: list[Any] = []
    if diff is not None and not result.isError:
        path, before, after = diff
        content.append(helpers.tool_diff_content(str(path), after, before))
    text = (refusal_text(result.content) if result.isError else None) or result.content
    if result.omitted > 0:
        text += f"\n… {result.omitted:,} more characters (the model read them; not shown)"
    content.append(text_content(text))
    return helpers.update_tool_call(
        result.toolCallId, status="failed" if result.isError else "completed", content=content
    )


def refusal_note(text: str | None) -> list[Any]:
    """A refusal in the conversation too: some clients show a failed call by its title only
    (CodeCompanion), and the user must still read why."""
    return [helpers.update_agent_message_text(f"\n\n{text}\n")] if text else []


def _refused(result: u.ToolResultUpdate) -> str | None:
    return refusal_text(result.content) if result.isError else None


def blocked(call: u.BlockedUpdate) -> schema.ToolCallProgress:
    reason = f"{REFUSAL_WORDS[call.error]}: {call.reason}"
    content = [text_content(reason)]
    return helpers.update_tool_call(call.toolCallId, status="failed", content=content)


def plan_entries(todos: list[Todo]) -> schema.AgentPlanUpdate:
    """The whole todo list as ACP plan entries (ACP replaces the plan with each update)."""
    return helpers.update_plan(helpers.plan_entry(t.content, status=t.status) for t in todos)


def usage(state: SessionState) -> schema.UsageUpdate | None:
    used = state.usage
    if used.contextWindow <= 0:
        return None
    cost = used.costUsd
    return schema.UsageUpdate(
        session_update="usage_update",
        used=max(0, used.contextTokens),
        size=used.contextWindow,
        cost=schema.Cost(amount=cost, currency="USD") if cost is not None else None,
    )


def mode_changed(mode: str) -> list[Any]:
    return [
        helpers.update_current_mode(mode),
        schema.ConfigOptionUpdate(
            session_update="config_option_update", config_options=config_options(mode)
        ),
    ]


def updates_for(update: u.Update, root: Path, *, replay: bool = False) -> list[Any]:
    """The ACP updates one core update becomes (a tool result's diff is `Walk`'s: it knows
    the file's text before the call); `replay`: rendering a stored conversation again."""
    match update:
        case u.TextUpdate(delta=delta):
            return [helpers.update_agent_message_text(delta)] if delta else []
        case u.ToolCallUpdate(subagent=str(), description=description):
            # The `task` call's own card is the subagent's: its result ends it.
            label = description or "a task"
            return [helpers.update_agent_thought_text(f"Subagent started: {label}.")]
        case u.ToolCallUpdate():
            return [tool_call_start(update, root)]
        case u.ToolResultUpdate():
            return [tool_result(update), *refusal_note(_refused(update))]
        case u.BlockedUpdate():
            return [
                blocked(update),
                *refusal_note(f"{REFUSAL_WORDS[update.error]}: {update.reason}"),
            ]
        case u.TodosUpdate(todos=todos):
            return [plan_entries(todos)]
        case u.ModeChangedUpdate(mode=mode):
            return mode_changed(mode.value)
        case u.StateUpdate(state=state):
            found = usage(state)
            return [found] if found is not None else []
        case u.ErrorUpdate(message=message, retry=retry, failedPrompt=dropped):
            # The model server failed the run: the turn says how to try again (a prompt the
            # model never saw was taken out of the conversation; one it saw is kept).
            how = (
                " Send /retry (or the prompt again) to retry."
                if dropped
                else (" Send /retry to go on from the last complete step.")
            )
            text = f"\n\nError: {message}{how if retry else ''}\n"
            return [helpers.update_agent_message_text(text)]
        case (
            u.DeviationUpdate(message=message)
            | u.CheckpointUpdate(action="reverted" | "redone" | "denied", message=message)
        ):
            return [helpers.update_agent_message_text(f"\n\nNote: {message}\n")]
        case u.CancelledCallsUpdate(calls=calls, reason=reason):
            stopped = [text_content(f"Stopped: {reason}")]
            return [
                helpers.update_tool_call(c.callId or c.tool, status="failed", content=stopped)
                for c in calls
            ]
        case u.CompactionUpdate(tokensBefore=before, tokensAfter=after):
            return [
                helpers.update_agent_thought_text(
                    f"Compacted the conversation ({before} → {after} tokens)."
                )
            ]
        case u.PermissionUpdate(decision=str(decision)) if replay:
            answer = decision.replace("_", " ")
            return [
                helpers.update_agent_thought_text(
                    f"Permission for {update.tool} ({update.summary}): {answer}."
                )
            ]
        case u.PromptUpdate(origin="prompt", text=text) if replay:
            return [helpers.update_user_message_text(text)]
        case u.PromptUpdate(text=text) if replay:
            return [helpers.update_agent_thought_text(text)]
    return []


class Walk:
    """One ACP session's walk of the core's updates: what it keeps between them — the text
    of each file an edit call under way will change (for its result's diff), the calls
    announced and not yet ended (a permission request is asked on its call), the calls
    refused (their refusal is said once), the usage last told (told again only when a
    figure changed), and the model's latest `exit_plan_mode` call (the plan's approval is
    asked on it). `replay`: walking a stored conversation (no disk reads)."""

    def __init__(self, root: Path, *, replay: bool = False) -> None:
        self.root = root
        self.replay = replay
        self._before: dict[str, tuple[Path, str | None]] = {}
        self._open: dict[str, tuple[str, dict[str, Any]]] = {}
        self._refused: set[str] = set()
        self._usage: schema.UsageUpdate | None = None
        self.last_exit_call: str | None = None

    def live(self, update: u.Update) -> list[Any]:
        if isinstance(update, u.ToolCallUpdate) and update.toolCallId:
            arguments = arguments_of(update)
            self._open[update.toolCallId] = (update.tool, arguments)
            if update.tool == "exit_plan_mode":
                self.last_exit_call = update.toolCallId
            path = call_path(self.root, update.tool, arguments)
            if update.tool in EDIT_TOOLS and path is not None and not self.replay:
                self._before[update.toolCallId] = (path, disk_text(path))
        if isinstance(update, u.CancelledCallsUpdate):
            for call in update.calls:
                self._open.pop(call.callId, None)
        if isinstance(update, u.BlockedUpdate):
            self._open.pop(update.toolCallId, None)
            self._refused.add(update.toolCallId)
        if isinstance(update, u.ToolResultUpdate):
            self._open.pop(update.toolCallId, None)
            if update.toolCallId in self._refused:  # said by its `blocked` already
                self._refused.discard(update.toolCallId)
                return []
            diff = self._diff(update.toolCallId)
            return [tool_result(update, diff), *refusal_note(_refused(update))]
        if isinstance(update, u.StateUpdate):
            return self.usage_changed(update.state)
        return updates_for(update, self.root, replay=self.replay)

    def usage_changed(self, state: SessionState) -> list[Any]:
        """The usage update, when a figure differs from the last one told."""
        found = usage(state)
        if found is None or found == self._usage:
            return []
        self._usage = found
        return [found]

    def call_for(self, tool: str, arguments: dict[str, Any]) -> str | None:
        """The announced call, not yet ended, a permission request of `tool` is about: the
        latest with these arguments, else the latest of this tool."""
        calls = [(cid, args) for cid, (name, args) in self._open.items() if name == tool]
        same = [cid for cid, args in calls if args == arguments]
        found = same or [cid for cid, _ in calls]
        return found[-1] if found else None

    def _diff(self, call_id: str) -> tuple[Path, str | None, str] | None:
        before = self._before.pop(call_id, None)
        if before is None:
            return None
        path, old = before
        new = disk_text(path)
        return (path, old, new) if new is not None and new != old else None
