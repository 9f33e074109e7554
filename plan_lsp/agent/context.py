"""The model's context window: what the conversation looks like to the model after
compaction, what every request carries verbatim whatever was compacted, and how many tokens
a request takes.

The stored conversation is never rewritten: a compaction appends a record
(`meta["compaction"]`) and the model is sent a view, the summary of what is before
`keepFrom` then the rest with pruned outputs as stubs. After one, every request also carries
the pinned context: mode, original request, approved plan, todo list.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from plan_lsp.protocol.state import ApprovedPlan, Todo, WorkMode
from plan_lsp.providers.base import ChatMessage, ModelRequest
from plan_lsp.providers.tokens import estimate_message, estimate_request
from plan_lsp.tools.todo import render_todos

RECORD_KEY = "compaction"
# Marks the pinned context in a request (and so a compacted conversation).
PINNED = "pinned"

# Fractions of the window: past PRUNE_AT older tool outputs are pruned (no model call), and
# older turns summarized when pruning is not enough; nothing is sent past COMPACT_AT without
# compacting first; about RECENT of the window stays verbatim at the end.
PRUNE_AT = 0.4
COMPACT_AT = 0.8
RECENT = 0.2
# Below COMPACT_AT, older turns are summarized only when they hold at least this much.
SUMMARIZE_MIN = 0.15

# Tool outputs shorter than this stay (a stub would save nothing).
MIN_PRUNED_CHARS = 400


@dataclass
class CompactionRecord:
    """One compaction, as stored: self-contained (the summary covers everything before
    `keep_from`, earlier summaries included)."""

    keep_from: int
    # Stored index of a pruned tool output → how many of its first characters stay (0: none,
    # only the stub; more: an output the model had not seen yet, cut to fit the window).
    pruned: dict[int, int] = field(default_factory=dict)
    summary: str = ""
    trigger: str = "auto"
    tokens_before: int = 0
    tokens_after: int = 0

    def to_meta(self) -> dict[str, Any]:
        return {
            RECORD_KEY: {
                "keepFrom": self.keep_from,
                "pruned": sorted([index, kept] for index, kept in self.pruned.items()),
                "summary": self.summary,
                "trigger": self.trigger,
                "tokensBefore": self.tokens_before,
                "tokensAfter": self.tokens_after,
            }
        }

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> CompactionRecord | None:
        data = meta.get(RECORD_KEY)
        if not isinstance(data, dict):
            return None
        try:
            return cls(
                keep_from=int(data.get("keepFrom", 0)),
                pruned={int(i): max(0, int(kept)) for i, kept in data.get("pruned", [])},
                summary=str(data.get("summary", "")),
                trigger=str(data.get("trigger", "auto")),
                tokens_before=int(data.get("tokensBefore", 0)),
                tokens_after=int(data.get("tokensAfter", 0)),
            )
        except (TypeError, ValueError):
            return None

    def message(self) -> ChatMessage:
        """The record as it is stored in the conversation."""
        return ChatMessage(role="user", content=summary_text(self.summary), meta=self.to_meta())


def summary_text(summary: str) -> str:
    return (
        "[The earlier part of this conversation was compacted to save context. Its summary "
        "follows; tool outputs marked as pruned can be shown again with recall_output.]\n\n"
        + summary.strip()
        + "\n"
    )


def is_record(message: ChatMessage) -> bool:
    return RECORD_KEY in message.meta


def latest_record(stored: list[ChatMessage]) -> tuple[int, CompactionRecord] | None:
    for index in range(len(stored) - 1, -1, -1):
        if is_record(stored[index]):
            record = CompactionRecord.from_meta(stored[index].meta)
            if record is not None:
                return index, record
    return None


def stub(message: ChatMessage, kept: int = 0) -> ChatMessage:
    """A pruned tool output: what it was and how to see it again; with `kept`, its first
    characters and where the rest begins."""
    recall = f'recall_output(id="{message.tool_call_id}"'
    if kept > 0:
        content = (
            f"{message.content[:kept]}\n[… cut to fit the context window: "
            f"{len(message.content):,} characters in all; {recall}, offset={kept}) "
            "shows the rest]"
        )
    else:
        content = f"[pruned {len(message.content):,} chars; {recall})]"
    return ChatMessage(
        role="tool", content=content, tool_call_id=message.tool_call_id, name=message.name
    )


def live_part(stored: list[ChatMessage], record: CompactionRecord | None) -> list[int]:
    """Indexes of the stored messages the model still sees (records excluded)."""
    start = record.keep_from if record else 0
    return [i for i in range(start, len(stored)) if not is_record(stored[i])]


def view(stored: list[ChatMessage], record: CompactionRecord | None = None) -> list[ChatMessage]:
    """The conversation as the model is sent it (see the module's docstring)."""
    if record is None:
        found = latest_record(stored)
        if found is None:
            return list(stored)
        record = found[1]
    out = [ChatMessage(role="user", content=summary_text(record.summary))] if record.summary else []
    for index in live_part(stored, record):
        out.append(shown(stored, index, record))
    return out


def shown(stored: list[ChatMessage], index: int, record: CompactionRecord) -> ChatMessage:
    """Stored message `index` as the model sees it under `record`."""
    message = stored[index]
    if message.role == "tool" and index in record.pruned:
        return stub(message, record.pruned[index])
    return message


def is_do_opening(message: ChatMessage, approved: ApprovedPlan) -> bool:
    """Whether `message` is the opening the server wrote for a Do run of `approved` (marked
    so when it was made; never recognised by its text)."""
    meta = message.meta
    return (
        message.role == "user"
        and meta.get("kind") == "do"
        and meta.get("planSha256") == approved.sha256
    )


@dataclass
class Pinned:
    """What every request carries verbatim once the conversation was compacted."""

    mode: WorkMode
    request: str | None
    approved: ApprovedPlan | None
    todos: list[Todo]
    # The server's Do-run opening (`is_do_opening`) is in view: it holds the plan verbatim.
    plan_above: bool = False

    def message(self) -> ChatMessage:
        parts = [
            "[Kept verbatim across compaction — authoritative over any summary.]",
            f"Current mode: {self.mode.value}.",
        ]
        if self.request:
            parts.append(f"The user's original request for this run:\n<<<\n{self.request}\n>>>")
        if self.approved is not None and self.plan_above:
            parts.append(
                f"The approved plan ({self.approved.path}, sha256 {self.approved.sha256}) is "
                "above, verbatim, in the message that started this run."
            )
        elif self.approved is not None:
            parts.append(
                f"The approved plan ({self.approved.path}, sha256 {self.approved.sha256}), "
                f"verbatim:\n<<<\n{self.approved.text}>>>"
            )
        parts.append(f"The current todo list:\n{render_todos(self.todos)}")
        return ChatMessage(
            role="user", content="\n\n".join(parts), meta={"ephemeral": True, PINNED: True}
        )


class TokenMeter:
    """Estimates calibrated by what the provider reports: the ratio of reported input tokens
    to the offline estimate of the same request, smoothed. Never below the estimate's half or
    above three times it (a provider reporting nonsense cannot blind the budget)."""

    def __init__(self) -> None:
        self.ratio = 1.0
        self.samples = 0
        # The last request estimated: the loop sizes a request before sending it and again
        # when its usage comes back (requests are not changed once built).
        self._last: tuple[ModelRequest, int] | None = None

    def raw(self, request: ModelRequest) -> int:
        if self._last is None or self._last[0] is not request:
            self._last = (request, estimate_request(request))
        return self._last[1]

    def estimate(self, request: ModelRequest) -> int:
        return math.ceil(self.raw(request) * self.ratio)

    def estimate_messages(self, messages: list[ChatMessage]) -> int:
        return math.ceil(sum(estimate_message(m) for m in messages) * self.ratio)

    def observe(self, raw_estimate: int, reported_input: int) -> None:
        if raw_estimate <= 0 or reported_input <= 0:
            return
        ratio = min(3.0, max(0.5, reported_input / raw_estimate))
        self.ratio = ratio if self.samples == 0 else 0.6 * self.ratio + 0.4 * ratio
        self.samples += 1
