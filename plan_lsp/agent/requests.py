"""Model requests of one agent: the system prompt for the mode, the mode-change notes and
plan-mode reminders around the conversation, and the tool definitions the definition gate
lets through (`recall_output` only once the conversation was compacted)."""

from __future__ import annotations

from collections.abc import Callable

from plan_lsp.agent import prompts
from plan_lsp.agent.context import PINNED
from plan_lsp.agent.recall import RECALL_OUTPUT
from plan_lsp.config import Config
from plan_lsp.policy.definitions import definitions_for
from plan_lsp.protocol.state import WorkMode
from plan_lsp.providers.base import ChatMessage, ModelRequest, ToolSpec
from plan_lsp.session import Session
from plan_lsp.tools.registry import ToolRegistry

Assemble = Callable[[list[ChatMessage]], ModelRequest]


class RequestFrames:
    """Builds requests; remembers which mode events the model was already told of."""

    def __init__(
        self, session: Session, config: Config, registry: ToolRegistry, plan_shell: str
    ) -> None:
        self.session = session
        self.config = config
        self.registry = registry
        self.plan_shell = plan_shell
        self._plan_requests = 0
        self._seen_event_seq = session.store.last_event_seq(session.id)

    def tool_specs(self, allow_names: frozenset[str] | None) -> list[ToolSpec]:
        defs = definitions_for(
            self.registry.definitions(), self.session.mode, allow_names, self.plan_shell
        )
        return [ToolSpec(d.name, d.description, d.input_schema) for d in defs]

    def frame(
        self,
        run_id: str,
        allow_names: frozenset[str] | None,
        do_run: bool,
        *,
        consume: bool = True,
    ) -> Assemble:
        """Everything of the next request but the conversation (system prompt, mode notes,
        reminders, tools); returns how to build the request around a conversation. Taking
        a frame consumes the mode events it reports (unless `consume` is off: a frame only
        to measure with), so take one per model request."""
        session = self.session
        mode = session.mode
        system = prompts.system_prompt(mode, str(session.workspace), do_run)
        after: list[ChatMessage] = []
        if consume:
            events = session.store.events(
                session.id, after=self._seen_event_seq, kinds=prompts.CONTEXT_EVENT_KINDS
            )
            self._seen_event_seq = session.store.last_event_seq(session.id)
            note = prompts.mode_change_note(events)
            if note is not None:
                after.append(note)
        if mode is WorkMode.PLAN:
            self._plan_requests += 1 if consume else 0
            after.append(prompts.plan_reminder(max(1, self._plan_requests)))
        tools = self.tool_specs(allow_names)
        config = self.config

        def assemble(conversation: list[ChatMessage]) -> ModelRequest:
            compacted = any(m.meta.get(PINNED) for m in conversation)
            return ModelRequest(
                run_id=run_id,
                mode=mode.value,
                messages=[system, *conversation, *after],
                tools=tools if compacted else [t for t in tools if t.name != RECALL_OUTPUT],
                model=config.model,
                temperature=config.temperature,
                max_tokens=config.max_tokens,
            )

        return assemble
