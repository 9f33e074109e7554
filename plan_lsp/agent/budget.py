"""The context budget of one agent: the window, what each request is sent of the stored
conversation, automatic and on-demand compaction, token usage and per-run limits.

One owner for all of it, so the loop only asks two questions: "what do I send now?"
(`make_room`) and "may the run go on?" (`account`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from plan_lsp.agent.compaction import Compaction, Compactor, Depth
from plan_lsp.agent.context import (
    COMPACT_AT,
    PRUNE_AT,
    Pinned,
    TokenMeter,
    is_do_opening,
    latest_record,
    view,
)
from plan_lsp.agent.requests import Assemble
from plan_lsp.config import Config
from plan_lsp.providers.base import ChatMessage, ModelRequest, Provider, Usage
from plan_lsp.providers.windows import DEFAULT_CONTEXT_WINDOW, known_window
from plan_lsp.session import Session

log = logging.getLogger(__name__)

# Automatic compactions in a row without a model step in between, before a run stops.
MAX_COMPACTIONS_WITHOUT_PROGRESS = 2

# Appends a compaction record to the conversation: to the list and to the store.
Append = Callable[[ChatMessage], None]
Notify = Callable[[dict[str, Any]], None]


@dataclass
class RunSpend:
    tokens: int = 0
    cost: float = 0.0


class ContextFull(Exception):
    """Even after compacting, the next request would not fit the window."""


class ContextBudget:
    def __init__(self, session: Session, provider: Provider, config: Config, notify: Notify):
        self.session = session
        self.provider = provider
        self.config = config
        self.notify = notify  # where compactions are reported
        self.meter = TokenMeter()
        self.compactor = Compactor(provider, self.meter, self._summary_usage)
        self._window: int | None = None
        self._without_progress: dict[str, int] = {}
        self._requests: dict[str, str] = {}
        self._spend: dict[str, RunSpend] = {}
        self._current_run: str | None = None

    # -- the window ----------------------------------------------------------------------------

    async def window(self) -> int:
        """The user's `context_window`, else the model table, else what the server reports,
        else a conservative default. Asked once."""
        if self._window is None:
            model = self.config.model or getattr(self.provider, "model", None)
            window = self.config.context_window or known_window(model)
            source = "configured" if self.config.context_window else "model table"
            if window is None:
                try:
                    window = await self.provider.context_window()
                except Exception:  # asking is a courtesy: never a reason to fail a run
                    log.warning("the provider could not say its context window", exc_info=True)
                source = "server"
            if window is None:
                window, source = DEFAULT_CONTEXT_WINDOW, "default"
            self._window = window
            log.info("context window %d tokens (%s)", window, source)
            if self.session.usage.contextWindow != window:
                self.session.update_usage(contextWindow=window)
        return self._window

    # -- what the model is sent ---------------------------------------------------------------

    def remember_request(self, conversation: str, text: str) -> None:
        """The user's original request of the run in this conversation (kept verbatim)."""
        self._requests[conversation] = text

    def conversation(self, stored: list[ChatMessage], conversation: str) -> list[ChatMessage]:
        """The stored conversation as the model sees it: after a compaction, its view and
        the pinned context."""
        if latest_record(stored) is None:
            return list(stored)
        shown = view(stored)
        return [*shown, self._pinned(conversation, shown)]

    def _pinned(self, conversation: str, shown: list[ChatMessage] | None = None) -> ChatMessage:
        session = self.session
        approved = session.approved
        # The plan once per request: the Do run's opening, which the server wrote, may still
        # be in view. Only that message counts: the plan's text quoted in a summary, a tool
        # output or a prompt is not the approved plan.
        in_view = approved is not None and any(is_do_opening(m, approved) for m in shown or [])
        return Pinned(
            mode=session.mode,
            request=self._requests.get(conversation) or session.task,
            approved=approved,
            todos=list(session.todos),
            plan_above=in_view,
        ).message()

    async def make_room(
        self,
        stored: list[ChatMessage],
        conversation: str,
        assemble: Assemble,
        run_id: str,
        append: Append,
    ) -> ModelRequest:
        """The next request, compacted first when it would pass PRUNE_AT (prune only) or
        COMPACT_AT (prune, then summarize) of the window. Raises ContextFull when it cannot
        fit: after MAX_COMPACTIONS_WITHOUT_PROGRESS automatic compactions without a model
        step between them, or past the whole window with nothing left to compact."""
        window = await self.window()
        while True:
            request = assemble(self.conversation(stored, conversation))
            estimate = self.meter.estimate(request)
            if estimate <= PRUNE_AT * window:
                return request
            over = estimate > COMPACT_AT * window
            stalled = self._without_progress.get(conversation, 0)
            if stalled >= MAX_COMPACTIONS_WITHOUT_PROGRESS:
                if estimate <= window and not over:
                    return request
                raise ContextFull(self._full_message(estimate, window, stalled))
            depth: Depth = "auto" if over else "prune"
            done = await self.compact(stored, conversation, assemble, depth, run_id, append)
            if done is None:
                if estimate <= window:
                    return request
                raise ContextFull(self._full_message(estimate, window, stalled))
            self._without_progress[conversation] = stalled + 1

    def _full_message(self, estimate: int, window: int, compactions: int) -> str:
        return (
            f"the next request needs about {estimate:,} tokens of the model's "
            f"{window:,}-token context window, and {compactions} compaction(s) in a row "
            "could not make room; the run stopped. Start a new session, or set a larger "
            "context_window if the model has one."
        )

    async def compact(
        self,
        stored: list[ChatMessage],
        conversation: str,
        assemble: Assemble,
        depth: Depth,
        run_id: str | None,
        append: Append,
        trigger: str = "auto",
    ) -> Compaction | None:
        """Compact `stored` now: the record goes through `append` (to `stored` and the
        store), the client is told, the usage updated. None: nothing could be freed."""
        window = await self.window()

        def measure(messages: list[ChatMessage]) -> int:
            return self.meter.estimate(assemble([*messages, self._pinned(conversation, messages)]))

        template = assemble([])
        done = await self.compactor.compact(stored, measure, window, depth, template)
        if done is None:
            return None
        done.record.trigger = trigger
        append(done.record.message())
        usage = self.session.usage
        self.session.update_usage(
            compactions=usage.compactions + 1, contextTokens=done.record.tokens_after
        )
        self.notify(
            {
                "runId": run_id,
                "kind": "compaction",
                "trigger": trigger,
                "summary": done.record.summary
                if done.summarized
                else f"{done.pruned_now} older tool output(s) pruned; the rest is unchanged.",
                "prunedOutputs": done.pruned_now,
                "tokensBefore": done.record.tokens_before,
                "tokensAfter": done.record.tokens_after,
            }
        )
        log.info(
            "compacted (%s, %s): %d → %d tokens, %d outputs pruned",
            trigger,
            "summarized" if done.summarized else "pruned",
            done.record.tokens_before,
            done.record.tokens_after,
            done.pruned_now,
        )
        return done

    # -- usage and limits ---------------------------------------------------------------------

    def begin_run(self, run_id: str) -> None:
        self._current_run = run_id
        self._spend.setdefault(run_id, RunSpend())

    def end_run(self, run_id: str) -> None:
        self._spend.pop(run_id, None)
        if self._current_run == run_id:
            self._current_run = None

    def account(
        self, run_id: str, conversation: str, request: ModelRequest, usage: Usage
    ) -> str | None:
        """Record one response's usage; returns why the run must stop (a limit), or None."""
        self._without_progress[conversation] = 0
        if usage.input_tokens:
            self.meter.observe(self.meter.raw(request), usage.input_tokens)
        context = usage.input_tokens or self.meter.estimate(request)
        self._add(run_id, usage, context_tokens=context)
        return self._over_limit(run_id)

    def _summary_usage(self, usage: Usage) -> None:
        self._add(self._current_run, usage, context_tokens=None)

    def _add(self, run_id: str | None, usage: Usage, context_tokens: int | None) -> None:
        price = self.config.price
        cost = (
            price.cost(usage.input_tokens, usage.output_tokens, usage.cached_input_tokens)
            if price is not None
            else None
        )
        if run_id is not None:
            spend = self._spend.setdefault(run_id, RunSpend())
            spend.tokens += usage.input_tokens + usage.output_tokens
            spend.cost += cost or 0.0
        current = self.session.usage
        changes: dict[str, Any] = {
            "inputTokens": current.inputTokens + usage.input_tokens,
            "outputTokens": current.outputTokens + usage.output_tokens,
            "cachedInputTokens": current.cachedInputTokens + usage.cached_input_tokens,
        }
        if cost is not None:
            changes["costUsd"] = round((current.costUsd or 0.0) + cost, 6)
        if context_tokens is not None:
            changes["contextTokens"] = context_tokens
        self.session.update_usage(**changes)

    def _over_limit(self, run_id: str) -> str | None:
        limits = self.config.limits
        spend = self._spend.get(run_id, RunSpend())
        if limits.run_tokens is not None and spend.tokens > limits.run_tokens:
            return (
                f"this run used {spend.tokens:,} tokens, more than the limit of "
                f"{limits.run_tokens:,} (limits.run_tokens); it stopped"
            )
        if limits.run_cost_usd is not None and spend.cost > limits.run_cost_usd:
            return (
                f"this run cost ${spend.cost:.4f}, more than the limit of "
                f"${limits.run_cost_usd:.4f} (limits.run_cost_usd); it stopped"
            )
        return None
