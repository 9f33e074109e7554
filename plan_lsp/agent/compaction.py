"""Compaction: make room in the model's context window without losing what matters.

First older tool outputs are pruned to stubs (no model call; `recall_output` shows them
again); if that is not enough the older turns are summarized by the model. It never runs a
tool or touches mode, approval or plan status: it only appends a record (`agent.context`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from plan_lsp.agent.context import (
    COMPACT_AT,
    MIN_PRUNED_CHARS,
    PRUNE_AT,
    RECENT,
    SUMMARIZE_MIN,
    CompactionRecord,
    TokenMeter,
    latest_record,
    live_part,
    shown,
    view,
)
from plan_lsp.providers.base import (
    ChatMessage,
    Finish,
    ModelRequest,
    Provider,
    ProviderError,
    TextDelta,
    Usage,
)

log = logging.getLogger(__name__)

# "prune": the request is past PRUNE_AT: prune, and summarize when the older turns are
# worth it; "auto": past COMPACT_AT: prune, then summarize if that is not enough; "full":
# prune and summarize (the user asked).
Depth = Literal["prune", "auto", "full"]

SUMMARY_PROMPT = """You compact the conversation of a coding agent so it can continue \
with less context. Write a summary the agent can work from, in Markdown, with exactly these \
sections:

## Goal
What the user asked for, in their words where it matters.
## Done so far
What was read, learnt, decided and changed (files and what changed in them).
## Facts to keep
Names, paths, commands, errors, numbers the agent will need again.
## Open items
What remains, and anything the user is waiting for.

Write only the summary: no preamble, no tool calls. The approved plan, the todo list, the mode \
and the user's request are kept verbatim elsewhere — do not restate the plan."""

# How much of one tool call or output the summarizer reads.
_CALL_CHARS = 600
_OUTPUT_CHARS = 1_500


@dataclass
class Compaction:
    record: CompactionRecord
    # Tool outputs this compaction took out of the model's view (pruned to a stub, or in the
    # turns it summarized).
    pruned_now: int
    summarized: bool


class Compactor:
    """Computes compaction records for one agent; `measure` tells what a request holding a
    given conversation view would take (tokens), so the record is judged by what is sent."""

    def __init__(
        self,
        provider: Provider,
        meter: TokenMeter,
        on_usage: Callable[[Usage], None],
    ) -> None:
        self.provider = provider
        self.meter = meter
        self.on_usage = on_usage

    async def compact(
        self,
        stored: list[ChatMessage],
        measure: Callable[[list[ChatMessage]], int],
        window: int,
        depth: Depth,
        request_template: ModelRequest,
    ) -> Compaction | None:
        """A new record for `stored`, or None when nothing can be freed."""
        found = latest_record(stored)
        previous = found[1] if found else CompactionRecord(keep_from=0)
        live = live_part(stored, previous)
        before = measure(view(stored, previous) if found else list(stored))
        # A prune keeps half the usual tail: the request then drops well below PRUNE_AT, and
        # the next prune (which changes what a provider's prompt cache holds) comes later.
        keep = RECENT / 2 if depth == "prune" else RECENT
        tail = self._tail_start(stored, live, previous, keep * window)
        if depth == "full":
            # The user asked: everything before the last exchange is summarized.
            prompts = [i for i in live if stored[i].role == "user"]
            tail = max(tail, prompts[-1]) if prompts else tail
        # Outputs the model has not seen yet (after its last answer) are never pruned whole.
        answers = [i for i in live if stored[i].role == "assistant"]
        unseen = {i for i in live if answers and i > answers[-1] and stored[i].role == "tool"}
        oversized = RECENT * window / 2
        pruned = dict(previous.pruned)
        for index in live:
            message = stored[index]
            if message.role != "tool" or index in unseen or index in pruned:
                continue
            if len(message.content) < MIN_PRUNED_CHARS:
                continue
            # Past COMPACT_AT (or asked), an output too large for the tail goes too.
            large = depth != "prune" and self.meter.estimate_messages([message]) > oversized
            if index < tail or large:
                pruned[index] = 0
        record = CompactionRecord(
            keep_from=previous.keep_from,
            pruned=pruned,
            summary=previous.summary,
            tokens_before=before,
        )
        head = [index for index in live if index < tail]
        summarized = False
        if head and self._should_summarize(stored, head, record, measure, window, depth):
            summary = await self._summarize(
                previous.summary, [shown(stored, i, record) for i in head], window, request_template
            )
            record = CompactionRecord(
                keep_from=tail,
                pruned={i: kept for i, kept in pruned.items() if i >= tail},
                summary=summary,
                tokens_before=before,
            )
            summarized = True
        if depth != "prune":
            self._clip_unseen(stored, record, sorted(unseen), measure, window)
        record.tokens_after = measure(view(stored, record))
        pruned_now = len(set(record.pruned) - set(previous.pruned))
        if summarized:
            pruned_now += sum(
                1 for i in head if stored[i].role == "tool" and i not in previous.pruned
            )
        if not summarized and pruned_now == 0:
            return None
        return Compaction(record, pruned_now, summarized)

    def _should_summarize(
        self,
        stored: list[ChatMessage],
        head: list[int],
        record: CompactionRecord,
        measure: Callable[[list[ChatMessage]], int],
        window: int,
        depth: Depth,
    ) -> bool:
        """Asked: always. Otherwise when pruning left the request above PRUNE_AT — past
        COMPACT_AT whatever the older turns hold, below it only when they are worth a model
        call (SUMMARIZE_MIN of the window), so a short head never makes every request
        summarize."""
        if depth == "full":
            return True
        if measure(view(stored, record)) <= PRUNE_AT * window:
            return False
        if depth == "auto":
            return True
        older = self.meter.estimate_messages([shown(stored, i, record) for i in head])
        return older >= SUMMARIZE_MIN * window

    def _clip_unseen(
        self,
        stored: list[ChatMessage],
        record: CompactionRecord,
        unseen: list[int],
        measure: Callable[[list[ChatMessage]], int],
        window: int,
    ) -> None:
        """When the request still would not fit below COMPACT_AT, the newest outputs keep
        only their beginning (a share of what is left each); the rest is recallable."""
        size = measure(view(stored, record))
        if size <= COMPACT_AT * window or not unseen:
            return
        costs = {i: max(1, self.meter.estimate_messages([stored[i]])) for i in unseen}
        others = size - sum(costs.values())
        share = max(500, int((PRUNE_AT * window - others) / len(unseen)))
        for index in unseen:
            if costs[index] > share:
                content = stored[index].content
                record.pruned[index] = max(1, int(len(content) * share / costs[index]))

    def _tail_start(
        self,
        stored: list[ChatMessage],
        live: list[int],
        previous: CompactionRecord,
        budget: float,
    ) -> int:
        """Where the verbatim tail begins: the earliest user or assistant message from which
        the rest fits in `budget` tokens (a tool output is never cut from its call);
        at least the last exchange. Outputs too large to keep count as their stubs."""
        oversized = budget / 2
        boundaries = [i for i in live if stored[i].role != "tool"]
        if not boundaries:
            return len(stored)
        start = boundaries[-1]
        suffix = 0
        for index in reversed(live):
            cost = self.meter.estimate_messages([shown(stored, index, previous)])
            suffix += min(cost, 40) if cost > oversized else cost
            if stored[index].role == "tool":
                continue
            if suffix > budget and index != boundaries[-1]:
                break
            start = index
        return start

    async def _summarize(
        self,
        earlier: str,
        messages: list[ChatMessage],
        window: int,
        template: ModelRequest,
    ) -> str:
        transcript = _transcript(earlier, messages, max_chars=int(0.5 * window * 3))
        request = ModelRequest(
            run_id=template.run_id,
            mode=template.mode,
            messages=[
                ChatMessage(role="system", content=SUMMARY_PROMPT),
                ChatMessage(role="user", content=transcript),
            ],
            tools=[],
            model=template.model,
            temperature=template.temperature,
            max_tokens=max(256, min(2_048, window // 8)),
            purpose="compaction",
        )
        parts: list[str] = []
        try:
            async for event in self.provider.stream(request):
                if isinstance(event, TextDelta):
                    parts.append(event.text)
                elif isinstance(event, Finish):
                    self.on_usage(event.usage)
                    break
        except ProviderError as exc:
            log.warning("the model could not summarize (%s); a plain summary is kept", exc)
            return _plain_summary(earlier, messages)
        summary = "".join(parts).strip()
        cap = max(2_000, int(0.1 * window * 3))
        if not summary:
            return _plain_summary(earlier, messages)
        return summary[:cap]


def _transcript(earlier: str, messages: list[ChatMessage], max_chars: int) -> str:
    """The older turns as text for the summarizer: the earliest cut when too long (the
    earlier summary is always kept)."""
    lines: list[str] = []
    for message in messages:
        if message.role == "user":
            lines.append(f"user: {message.content}")
        elif message.role == "assistant":
            if message.content:
                lines.append(f"assistant: {message.content}")
            for call in message.tool_calls:
                lines.append(f"assistant called {call.name} {call.arguments[:_CALL_CHARS]}")
        elif message.role == "tool":
            lines.append(f"tool {message.name or ''} answered: {message.content[:_OUTPUT_CHARS]}")
    body = "\n".join(lines)
    if len(body) > max_chars:
        body = "[… earliest part cut …]\n" + body[-max_chars:]
    head = f"Summary of the conversation before this part:\n{earlier}\n\n" if earlier else ""
    return f"{head}The conversation to summarize:\n{body}\n"


def _plain_summary(earlier: str, messages: list[ChatMessage]) -> str:
    """A summary without the model: the requests and the calls, in order."""
    lines = ["## Goal"]
    asked = [m.content.strip()[:300] for m in messages if m.role == "user" and m.content.strip()]
    lines += [f"- {a}" for a in asked[-5:]] or ["- (see the earlier summary)"]
    lines.append("## Done so far")
    for message in messages:
        for call in message.tool_calls:
            lines.append(f"- {call.name} {call.arguments[:120]}")
    body = "\n".join(lines[:80])
    return (f"{earlier.strip()}\n\n{body}" if earlier else body).strip()
