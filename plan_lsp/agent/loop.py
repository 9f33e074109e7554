"""The agent loop (ReAct): model request → streamed answer → tool calls through the gate →
observations → next request, until the model stops, a tool ends the turn, the user cancels
or the step limit is hit."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from plan_lsp.agent.budget import ContextBudget, ContextFull, Notify
from plan_lsp.agent.compaction import Compaction
from plan_lsp.agent.model_stream import (
    MAX_TOOL_ARGUMENT_CHARS,
    ModelStream,
    StreamingCall,
    until_cancelled,
)
from plan_lsp.agent.plan_tools import PlanDraftPort, plan_tools
from plan_lsp.agent.recall import recall_tool
from plan_lsp.agent.requests import RequestFrames
from plan_lsp.agent.subagent import task_tool
from plan_lsp.config import Config
from plan_lsp.policy.execution import ExecutionGate
from plan_lsp.policy.permissions import PermissionEngine
from plan_lsp.policy.ports import EditorPort
from plan_lsp.policy.safety import Safety
from plan_lsp.protocol.state import Todo
from plan_lsp.providers.base import ChatMessage, Provider, ProviderError, ToolCall, error_help
from plan_lsp.session import Actor, Session
from plan_lsp.tools.base import ToolContext, ToolResult, UserPort
from plan_lsp.tools.mcp.manager import McpManager
from plan_lsp.tools.registry import ToolRegistry, builtin_registry
from plan_lsp.tools.runner import ToolRunner
from plan_lsp.tools.todo_ledger import StepLedger
from plan_lsp.tools.todo_model import RecordedTodos

log = logging.getLogger(__name__)


@dataclass
class AgentPorts:
    editor: EditorPort
    user: UserPort
    drafts: PlanDraftPort
    notify: Notify


@dataclass
class RunResult:
    run_id: str
    stop_reason: str
    text: str = ""
    touched: list[str] = field(default_factory=list)
    # The model answered at least once in this run.
    answered: bool = False


@dataclass(frozen=True)
class FailedRun:
    """A run the model server failed (refused, 5xx, a broken stream), as `planLsp/retry`
    starts it again: `opening` is the prompt when the model never saw it (it was taken out
    of the conversation, so it is sent once); None when the run goes on from its last
    complete step (the conversation holds no half turn)."""

    run_id: str
    conversation: str
    opening: ChatMessage | None
    do_run: bool


# How much of a tool's observation a `toolResult` update carries (the model reads it all).
RESULT_SHOWN_CHARS = 4000


class Agent:
    """Runs the model for one workspace session. One run at a time."""

    def __init__(
        self,
        session: Session,
        provider: Provider,
        config: Config,
        ports: AgentPorts,
        plan_shell: str,
        *,
        mcp: McpManager | None = None,
    ) -> None:
        self.session = session
        self.stream = ModelStream(session, provider, ports.drafts)
        self.config = config
        # Files written per run (a run's subagents included), and how deep each run nests.
        self._touched: dict[str, list[str]] = {}
        self._depth: dict[str, int] = {}
        # What happened during each step of the latest run's todo list (one run at a time).
        self._todo_ledger: tuple[str, StepLedger] | None = None
        self.ports = ports
        self.registry: ToolRegistry = builtin_registry()
        for tool in plan_tools(session, ports.drafts, config.allow_enter_plan_in_yolo):
            self.registry.register(tool)
        self.registry.register(
            task_tool(
                self._run_child, lambda: frozenset(d.name for d in self.registry.definitions())
            )
        )
        # MCP tool sources: the workspace's manager (None: no server is configured).
        self.mcp = mcp
        try:
            self.permissions = PermissionEngine(
                allow=config.permissions.allow,
                ask=config.permissions.ask,
                deny=config.permissions.deny,
                workspace_roots=[session.workspace],
            )
        except ValueError as exc:
            # A bad rule must not silently widen anything: with no rules, every
            # side-effect call asks (or is refused by the mode), and the user is told.
            ports.notify({"kind": "error", "message": f"permission rules ignored: {exc}"})
            self.permissions = PermissionEngine(workspace_roots=[session.workspace])
        self.gate = ExecutionGate(
            session=session,
            permissions=self.permissions,
            port=ports.user,
            plan_shell=plan_shell,
            plan_network=config.plan_network,
        )
        self.runner = ToolRunner(self.registry, self.gate)
        self.budget = ContextBudget(session, provider, config, ports.notify)
        self.registry.register(recall_tool(session))
        self.requests = RequestFrames(session, config, self.registry, plan_shell)
        # Asked after each batch of tool calls of a top-level run: stop it there (step mode).
        self.stop_after_step: Callable[[str], bool] = lambda run_id: False
        # The last run, when the model server failed it: what a retry starts again.
        self.failed: FailedRun | None = None

    # -- compaction on demand -----------------------------------------------------------------

    async def compact_now(self, run_id: str, cancel: asyncio.Event) -> Compaction | None:
        """Compact the session's conversation now (the user asked): prune and summarize.
        None when there is nothing to compact (or the user cancelled)."""
        conv = self.session.conversation
        messages = self.load_conversation(conv)
        frame = self.requests.frame(run_id, None, do_run=False, consume=False)
        work = self.budget.compact(
            messages,
            conv,
            frame,
            "full",
            run_id,
            lambda record: self._append(conv, run_id, messages, record),
            trigger="manual",
        )
        return await until_cancelled(work, cancel)

    # -- conversation persistence ------------------------------------------------------------

    def load_conversation(self, conversation: str) -> list[ChatMessage]:
        raw = self.session.store.messages(self.session.id, conversation)
        return [ChatMessage.from_json(m) for m in raw]

    def _append(
        self, conversation: str, run_id: str, messages: list[ChatMessage], msg: ChatMessage
    ) -> None:
        assert not msg.meta.get("ephemeral"), "ephemeral context is never stored"
        messages.append(msg)
        self.session.store.append_message(self.session.id, conversation, run_id, msg.to_json())

    # -- the loop ---------------------------------------------------------------------------

    def _edits_a_file(self, name: str) -> bool:
        """The tool changes a workspace file's text (its definition's role says so)."""
        tool = self.registry.get(name)
        return tool is not None and tool.definition.role == "edit"

    async def _run_child(
        self,
        run_id: str,
        opening: ChatMessage,
        cancel: asyncio.Event,
        conversation: str,
        allow_names: frozenset[str],
    ) -> tuple[str, str]:
        """A subagent's conversation, run to its end: (stop reason, final text)."""
        result = await self.run(
            run_id,
            opening,
            cancel,
            conversation=conversation,
            allow_names=allow_names,
            emit_done=False,
        )
        return result.stop_reason, result.text

    async def run(
        self,
        run_id: str,
        opening: ChatMessage | None,
        cancel: asyncio.Event,
        *,
        conversation: str | None = None,
        allow_names: frozenset[str] | None = None,
        do_run: bool = False,
        emit_done: bool = True,
    ) -> RunResult:
        conv = conversation or self.session.conversation
        messages = self.load_conversation(conv)
        if opening is not None:
            self._append(conv, run_id, messages, opening)
            request_text = (self.session.task or opening.content) if do_run else opening.content
            self.budget.remember_request(conv, request_text)
        result = RunResult(run_id=run_id, stop_reason="end_turn")
        self.budget.begin_run(run_id)
        # Subagents run under their parent's run id: what they change is the run's too.
        self._depth[run_id] = self._depth.get(run_id, 0) + 1
        top = self._depth[run_id] == 1
        if top:
            self.failed = None

        def emit(kind: str, payload: dict[str, Any]) -> None:
            self.ports.notify({"runId": run_id, "kind": kind, **payload})

        try:
            result.stop_reason = await self._steps(
                run_id, conv, messages, cancel, allow_names, do_run, emit, result
            )
        except asyncio.CancelledError:
            result.stop_reason = "cancelled"
            raise
        except ProviderError as exc:
            result.stop_reason = "error"
            code, fix = error_help(exc)
            failed_prompt = top and not result.answered and opening is not None
            if failed_prompt:
                # The model never saw this prompt: it is not sent again with the next one.
                self.session.store.drop_run_messages(self.session.id, conv, run_id)
            if top:
                kept = opening if failed_prompt else None
                self.failed = FailedRun(run_id, conv, kept, do_run)
            emit(
                "error",
                {
                    "message": f"model provider error ({exc.kind}): {exc.message}",
                    "code": code,
                    "fix": fix,
                    "failedPrompt": failed_prompt,
                    "retry": top or None,
                },
            )
        except Exception as exc:  # the server never dies from a run
            log.exception("run %s failed", run_id)
            result.stop_reason = "error"
            emit("error", {"message": f"internal error: {exc}"})
        finally:
            self._depth[run_id] -= 1
            if self._depth[run_id] == 0:
                del self._depth[run_id]
                result.touched = self._touched.pop(run_id, [])
                self.budget.end_run(run_id)
            else:
                result.touched = list(self._touched.get(run_id, []))
            if emit_done:
                emit("done", {"stopReason": result.stop_reason, "touched": result.touched})
        return result

    async def _steps(
        self,
        run_id: str,
        conv: str,
        messages: list[ChatMessage],
        cancel: asyncio.Event,
        allow_names: frozenset[str] | None,
        do_run: bool,
        emit: Callable[[str, dict[str, Any]], None],
        result: RunResult,
    ) -> str:
        for _step in range(self.config.max_steps):
            if cancel.is_set():
                return "cancelled"
            await self._refresh_tool_sources(cancel)  # MCP
            if cancel.is_set():
                return "cancelled"
            frame = self.requests.frame(run_id, allow_names, do_run)
            try:
                request = await self.budget.make_room(
                    messages,
                    conv,
                    frame,
                    run_id,
                    lambda record: self._append(conv, run_id, messages, record),
                )
            except ContextFull as exc:
                emit("error", {"message": str(exc), "code": "context_full"})
                return "context_full"
            if cancel.is_set():
                return "cancelled"
            text, calls, usage = await self.stream.step(request, cancel, emit)
            if cancel.is_set():
                return "cancelled"
            over_limit = self.budget.account(run_id, conv, request, usage)
            assistant = ChatMessage(
                role="assistant",
                content=text,
                # A cut-off call is kept as a call without arguments: replayed as it came,
                # it would make every later request of the conversation fail.
                tool_calls=[
                    ToolCall(c.id, c.name, "{}" if c.cut_off else c.arguments) for c in calls
                ],
            )
            self._append(conv, run_id, messages, assistant)
            result.answered = True
            result.text = text
            if over_limit is not None and not calls:
                emit("error", {"message": over_limit, "code": "limit"})
                return "limit"
            if not calls:
                return "end_turn"
            ended = False
            for call in calls:
                if cancel.is_set():
                    observation = ToolResult.error("cancelled", "the user cancelled the run")
                elif call.oversized:
                    observation = ToolResult.error(
                        "arguments_too_large",
                        f"the arguments of {call.name} exceeded {MAX_TOOL_ARGUMENT_CHARS:,} "
                        "characters and were dropped; send smaller pieces",
                        tool=call.name,
                    )
                    emit("error", {"message": observation.data["message"]})  # type: ignore[index]
                elif call.cut_off:
                    observation = _cut_off(call)
                    emit("error", {"message": f"{call.name}: {observation.data['message']}"})  # type: ignore[index]
                else:
                    ran = await until_cancelled(
                        self._run_tool(run_id, call, cancel, allow_names, emit), cancel
                    )
                    observation = ran or ToolResult.error(
                        "cancelled", "the user cancelled the run during this call"
                    )
                    if not observation.is_error and self._edits_a_file(call.name):
                        path = (observation.data or {}).get("path")
                        if path:
                            self._touched.setdefault(run_id, []).append(str(path))
                tool_msg = ChatMessage(
                    role="tool",
                    content=observation.content,
                    tool_call_id=call.id,
                    name=call.name,
                )
                self._append(conv, run_id, messages, tool_msg)
                ended = ended or observation.ends_turn
            if ended:
                return "plan_submitted"
            if self._depth.get(run_id) == 1 and self.stop_after_step(run_id):
                return "step_done"
            if cancel.is_set():
                return "cancelled"
            if over_limit is not None:
                emit("error", {"message": over_limit, "code": "limit"})
                return "limit"
        emit("error", {"message": f"stopped after {self.config.max_steps} model requests"})
        return "max_steps"

    # -- tools ----------------------------------------------------------------------------------

    async def _refresh_tool_sources(self, cancel: asyncio.Event) -> None:
        """MCP: servers start on the first request that needs their tools; tools
        they added or dropped (list_changed, restarts) are in the registry before every
        request, so both gates filter the current list."""
        if self.mcp is None:
            return
        try:
            await until_cancelled(self.mcp.sync(self.registry), cancel)
        except Exception as exc:  # a tool source must never end the run
            log.exception("MCP tool sources could not be refreshed")
            self.ports.notify({"kind": "error", "message": f"MCP servers: {exc}"})

    async def _run_tool(
        self,
        run_id: str,
        call: StreamingCall,
        cancel: asyncio.Event,
        allow_names: frozenset[str] | None,
        emit: Callable[[str, dict[str, Any]], None],
    ) -> ToolResult:
        emit("toolCall", {"toolCallId": call.id, "tool": call.name, "arguments": call.arguments})
        ctx = ToolContext(
            workspace_roots=[self.session.workspace],
            plans_dir=self.session.plans_dir,
            run_id=run_id,
            tool_call_id=call.id,
            editor=self.ports.editor,
            user=self.ports.user,
            emit=emit,
            cancel=cancel,
            set_todos=self._set_todos(emit, run_id),
            extra={"allow_names": allow_names},
        )
        observation = await self.runner.call(call.name, call.arguments, ctx, allow_names)
        self._observe_step(run_id, call, observation)
        data = observation.data or {}
        error = data.get("error") if observation.is_error else None
        if error in ("tool_not_allowed", "permission_denied"):
            reason = data.get("reason") or data.get("message", "")
            emit(
                "blocked",
                {"toolCallId": call.id, "tool": call.name, "error": error, "reason": reason},
            )
        emit(
            "toolResult",
            {
                "toolCallId": call.id,
                "tool": call.name,
                "isError": observation.is_error,
                "content": observation.content[:RESULT_SHOWN_CHARS],
                "omitted": max(0, len(observation.content) - RESULT_SHOWN_CHARS),
            },
        )
        return observation

    def _step_ledger(self, run_id: str) -> StepLedger:
        if self._todo_ledger is None or self._todo_ledger[0] != run_id:
            self._todo_ledger = (run_id, StepLedger())
        return self._todo_ledger[1]

    def _observe_step(self, run_id: str, call: StreamingCall, observation: ToolResult) -> None:
        """Every call of a tool that changes the workspace, with its outcome: the todo list
        marks done only steps whose changes happened (tools/todo_ledger.py)."""
        tool = self.registry.get(call.name)
        if tool is None or tool.definition.safety is not Safety.SIDE_EFFECT:
            return
        self._step_ledger(run_id).observe(
            tool.definition, call.arguments, observation.is_error, observation.data
        )

    def _set_todos(
        self, emit: Callable[[str, dict[str, Any]], None], run_id: str
    ) -> Callable[[list[Todo]], RecordedTodos]:
        def set_todos(todos: list[Todo]) -> RecordedTodos:
            recorded = self._step_ledger(run_id).record(todos)
            self.session.set_todos(recorded.todos, Actor.MODEL)
            emit("todos", {"todos": [t.model_dump() for t in recorded.todos]})
            return recorded

        return set_todos


def _cut_off(call: StreamingCall) -> ToolResult:
    """The observation for a call whose arguments never became a JSON object."""
    if call.truncated:
        return ToolResult.error(
            "arguments_cut_off",
            f"the call of {call.name} was cut off at the response's token limit before its "
            "arguments were complete; it was not run. Call it again with shorter arguments "
            "(for a long file or plan, write less per call).",
            tool=call.name,
        )
    return ToolResult.error(
        "invalid_arguments",
        f"the arguments of {call.name} are not a JSON object; it was not run",
        tool=call.name,
    )
