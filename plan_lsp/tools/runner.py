"""The tool runner: the one path from a model's tool call to a tool implementation.

Order: unknown tool → argument JSON → the tool's arguments (its argument model, or for a
tool defined elsewhere its schema) → execution gate (which may ask the
user) → the implementation, under the tool's timeout. Whatever an implementation raises
becomes an error observation: the server never dies from a tool.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from dataclasses import dataclass
from typing import Any, Protocol

from plan_lsp.policy.execution import GateDecision
from plan_lsp.policy.ports import ChangePreview, FileChange
from plan_lsp.policy.safety import ArgumentsRefused, Safety, ToolDefinition
from plan_lsp.protocol.state import WorkMode
from plan_lsp.tools.base import ToolContext, ToolResult
from plan_lsp.tools.bash import PLAN_NETWORK_KEY, READ_ONLY_UNASKED_KEY
from plan_lsp.tools.edit import ASKED_CHANGE_KEY, MODE_PROVIDER_KEY
from plan_lsp.tools.registry import ToolRegistry

log = logging.getLogger(__name__)


class Gate(Protocol):
    async def check(
        self,
        definition: ToolDefinition,
        arguments: dict[str, Any],
        run_id: str,
        allow_names: frozenset[str] | None,
        *,
        preview: ChangePreview | None = None,
    ) -> GateDecision: ...

    def current_mode(self) -> WorkMode: ...


class CallWatch(Protocol):
    """Told of each side-effect call around its run (the Do run's checkpoints): `paths` are
    the files it names (its path argument). `after` may replace the result."""

    async def before(self, tool: str, call_id: str, paths: list[str]) -> None: ...

    async def after(
        self, tool: str, call_id: str, paths: list[str], result: ToolResult
    ) -> ToolResult: ...

    def denied(self, tool: str, paths: list[str]) -> None: ...


@dataclass
class InFlightCall:
    """A tool call whose implementation is running."""

    number: int
    tool: str
    run_id: str
    tool_call_id: str
    # Changes the workspace (a side-effect tool, or `bash` outside plan mode).
    side_effect: bool
    cancel: asyncio.Event
    task: asyncio.Task[ToolResult] | None = None
    stopped_because: str | None = None


# After the cancel signal (process-group kill for `bash`), how long a call may take to end
# before its task is cancelled outright.
STOP_GRACE_S = 2.0


async def _relay(source: asyncio.Event, target: asyncio.Event) -> None:
    await source.wait()
    target.set()


def _observation(payload: dict[str, Any]) -> ToolResult:
    return ToolResult(content=json.dumps(payload, ensure_ascii=False), is_error=True, data=payload)


class ToolRunner:
    def __init__(self, registry: ToolRegistry, gate: Gate) -> None:
        self.registry = registry
        self.gate = gate
        self._in_flight: dict[int, InFlightCall] = {}
        self._numbers = 0
        self.watch: CallWatch | None = None

    async def stop_side_effects(self, because: str, timeout: float = 15.0) -> list[InFlightCall]:
        """Stop every running call that changes the workspace and wait until each has ended:
        its cancel signal first (`bash` kills its process group), then its task. Returns the
        calls that were stopped."""
        calls = [c for c in self._in_flight.values() if c.side_effect]
        for call in calls:
            call.stopped_because = because
            call.cancel.set()
        tasks = {c.task for c in calls if c.task is not None and not c.task.done()}
        if tasks:
            _done, pending = await asyncio.wait(tasks, timeout=STOP_GRACE_S)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=timeout)
        return calls

    async def call(
        self,
        name: str,
        raw_arguments: str,
        ctx: ToolContext,
        allow_names: frozenset[str] | None = None,
    ) -> ToolResult:
        tool = self.registry.get(name)
        if tool is None:
            return ToolResult.error("unknown_tool", f"there is no tool named {name!r}", tool=name)
        try:
            arguments = json.loads(raw_arguments) if raw_arguments.strip() else {}
        except (json.JSONDecodeError, ValueError) as exc:
            return ToolResult.error(
                "invalid_arguments", f"the arguments of {name} are not valid JSON: {exc}", tool=name
            )
        if not isinstance(arguments, dict):
            return ToolResult.error(
                "invalid_arguments", f"the arguments of {name} must be a JSON object", tool=name
            )
        try:
            arguments = tool.definition.check_arguments(arguments)
        except ArgumentsRefused as exc:
            return ToolResult.error("invalid_arguments", f"{name}: {exc}", tool=name)

        # An edit tool's permission request shows what the tool's own code would write; the
        # tool then writes exactly what was shown (ASKED_CHANGE_KEY) or nothing.
        shown: list[FileChange | None] = []
        extra: dict[str, Any] = {}
        if tool.preview is not None:
            change_of = tool.preview

            async def preview() -> FileChange | None:
                change = await change_of(arguments, ctx)
                shown.append(change)
                return change

            extra["preview"] = preview
        try:
            decision = await self.gate.check(
                tool.definition, arguments, ctx.run_id, allow_names, **extra
            )
        except asyncio.CancelledError:
            raise
        except Exception:  # a broken check refuses: the gate fails closed
            log.exception("execution gate failed for %s", name)
            return _observation(
                {"error": "tool_not_allowed", "tool": name, "reason": "the permission check failed"}
            )
        arg = tool.definition.primary_argument
        named = arguments.get(arg.name) if arg is not None and arg.kind == "path" else None
        paths = [named] if isinstance(named, str) else []
        # Recorded in build mode only: a plan-mode call (a sandboxed or classified command)
        # changes nothing.
        recorded = tool.definition.safety is Safety.SIDE_EFFECT
        watch = self.watch if recorded and self.gate.current_mode() is not WorkMode.PLAN else None
        if not decision.allowed:
            if (
                watch is not None
                and (decision.observation or {}).get("error") == "permission_denied"
            ):
                watch.denied(name, paths)
            return _observation(
                decision.observation
                or {"error": "tool_not_allowed", "tool": name, "reason": decision.reason}
            )

        if watch is not None:
            await watch.before(name, ctx.tool_call_id, paths)
            if self.gate.current_mode() is WorkMode.PLAN:  # switched while it was recorded
                reason = "the session switched to plan mode"
                return _observation({"error": "tool_not_allowed", "tool": name, "reason": reason})
        if recorded and tool.definition.role != "edit" and watch is not None:
            # A command reads files from disk: the run's edits held in buffers go there first,
            # within the call's checkpoints (a change of the step, which a revert undoes).
            write_buffers = getattr(ctx.editor, "write_edited_buffers", None)
            if write_buffers is not None:
                await write_buffers()
        # Registered before anything awaits: a mode switch from now on sees this call.
        self._numbers += 1
        definition = tool.definition
        call = InFlightCall(
            number=self._numbers,
            tool=name,
            run_id=ctx.run_id,
            tool_call_id=ctx.tool_call_id,
            side_effect=definition.safety is Safety.SIDE_EFFECT
            and not (definition.classified_per_call and self.gate.current_mode() is WorkMode.PLAN),
            cancel=asyncio.Event(),
        )
        if ctx.cancel.is_set():
            call.cancel.set()
        call_ctx = dataclasses.replace(
            ctx,
            cancel=call.cancel,
            sandbox_shell=decision.sandbox,
            extra={
                **ctx.extra,
                MODE_PROVIDER_KEY: self.gate.current_mode,
                PLAN_NETWORK_KEY: decision.network,
                READ_ONLY_UNASKED_KEY: decision.read_only_unasked,
                **({ASKED_CHANGE_KEY: shown[-1]} if shown and shown[-1] is not None else {}),
            },
        )
        relay = asyncio.ensure_future(_relay(ctx.cancel, call.cancel))
        call.task = asyncio.ensure_future(
            asyncio.wait_for(tool.run(arguments, call_ctx), timeout=definition.timeout_s)
        )
        self._in_flight[call.number] = call
        try:
            result = await self._outcome(call, call.task, definition)
            if watch is not None:
                result = await watch.after(name, ctx.tool_call_id, paths, result)
            return result
        except asyncio.CancelledError:
            call.task.cancel()
            raise
        finally:
            relay.cancel()
            del self._in_flight[call.number]

    @staticmethod
    async def _outcome(
        call: InFlightCall, task: asyncio.Task[ToolResult], definition: ToolDefinition
    ) -> ToolResult:
        name = definition.name
        await asyncio.wait({task})
        if call.stopped_because is not None and task.cancelled():
            return ToolResult.error(
                "cancelled",
                f"{name} was stopped before it finished: {call.stopped_because}",
                tool=name,
            )
        if task.cancelled():
            return ToolResult.error("cancelled", f"{name} was cancelled", tool=name)
        exc = task.exception()
        if isinstance(exc, TimeoutError):
            return ToolResult.error(
                "timeout", f"{name} did not finish within {definition.timeout_s:g} s", tool=name
            )
        if exc is not None:
            log.error("tool %s failed", name, exc_info=exc)
            return ToolResult.error(
                "tool_failed", f"{name} failed: {type(exc).__name__}: {exc}", tool=name
            )
        result = task.result()
        if not isinstance(result, ToolResult):
            return ToolResult.error("tool_failed", f"{name} returned no result", tool=name)
        if call.stopped_because is not None and result.is_error:
            # The tool noticed the cancel signal itself (bash killed its process group).
            details = {
                k: v for k, v in (result.data or {}).items() if k not in ("error", "message")
            }
            return ToolResult.error(
                "cancelled",
                f"{name} was stopped before it finished: {call.stopped_because}",
                **details,
            )
        return result
