"""One model response, as it streams: text deltas to the client, tool calls gathered (with
caps on what one step may stream), and `plan_write` arguments followed into the editor as a
live draft under a validated name."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from plan_lsp.plan.streaming import PartialArgumentsReader
from plan_lsp.protocol.state import WorkMode
from plan_lsp.providers.base import (
    Finish,
    ModelRequest,
    Provider,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallStart,
    Usage,
    is_json_object,
)
from plan_lsp.session import Session

if TYPE_CHECKING:
    from plan_lsp.agent.plan_tools import PlanDraftPort

T = TypeVar("T")

# What one model step may stream before the rest is dropped: a model that streams megabytes
# of arguments or text is stopped with a clear observation instead of exhausting memory.
MAX_TOOL_ARGUMENT_CHARS = 1_000_000
MAX_STEP_TEXT_CHARS = 1_000_000


async def until_cancelled(work: Coroutine[Any, Any, T], cancel: asyncio.Event) -> T | None:
    """Run `work` until it finishes or `cancel` is set (then it is cancelled: None)."""
    task = asyncio.ensure_future(work)
    waiter = asyncio.ensure_future(cancel.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        task.cancel()
        raise
    finally:
        waiter.cancel()
    if task.done():
        return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return None


@dataclass
class StreamingCall:
    index: int
    id: str
    name: str
    arguments: str = ""
    reader: PartialArgumentsReader | None = None
    draft_path: Path | None = None
    # The plan_filename already checked against the draft's file (checked once, not per delta).
    checked_name: str | None = None
    oversized: bool = False
    # The model stopped before the call's arguments were complete (its token limit: finish
    # reason "length"; so were the calls after it), or they are not a JSON object: the call
    # is never run, and its arguments are never replayed (servers refuse a history with them).
    cut_off: bool = False
    # ... and the reason was the token limit.
    truncated: bool = False


class ModelStream:
    """Reads one model response for the agent."""

    def __init__(self, session: Session, provider: Provider, drafts: PlanDraftPort) -> None:
        self.session = session
        self.provider = provider
        self.drafts = drafts

    async def step(
        self,
        request: ModelRequest,
        cancel: asyncio.Event,
        emit: Callable[[str, dict[str, Any]], None],
    ) -> tuple[str, list[StreamingCall], Usage]:
        """One model response and the usage the provider reported for it; a cancel (or the
        run's timeout) stops it even while the model is silent."""
        outcome = await until_cancelled(self._consume(request, cancel, emit), cancel)
        return outcome if outcome is not None else ("", [], Usage())

    async def _consume(
        self,
        request: ModelRequest,
        cancel: asyncio.Event,
        emit: Callable[[str, dict[str, Any]], None],
    ) -> tuple[str, list[StreamingCall], Usage]:
        text_parts: list[str] = []
        usage = Usage()
        text_chars = 0
        calls: dict[int, StreamingCall] = {}
        finish: str | None = None
        stream = self.provider.stream(request)
        try:
            async for event in stream:
                if cancel.is_set():
                    break
                if isinstance(event, TextDelta):
                    if text_chars >= MAX_STEP_TEXT_CHARS:
                        continue
                    text_chars += len(event.text)
                    text_parts.append(event.text)
                    emit("text", {"delta": event.text})
                    if text_chars >= MAX_STEP_TEXT_CHARS:
                        emit(
                            "error",
                            {"message": "the model's answer was cut at 1,000,000 characters"},
                        )
                elif isinstance(event, ToolCallStart):
                    call = StreamingCall(
                        event.index, event.id or f"call_{uuid.uuid4().hex[:8]}", event.name
                    )
                    calls[event.index] = call
                    await self._maybe_begin_draft(request.run_id, call)
                elif isinstance(event, ToolCallArgsDelta):
                    target = calls.get(event.index)
                    if target is None or target.oversized:
                        continue
                    if len(target.arguments) + len(event.delta) > MAX_TOOL_ARGUMENT_CHARS:
                        target.oversized = True
                        target.arguments = ""
                        await self._abandon(target)
                        continue
                    target.arguments += event.delta
                    await self._feed_draft(target, event.delta)
                elif isinstance(event, Finish):
                    finish = event.reason
                    usage = event.usage
                    break
        except BaseException:
            # Cancelled (or failed) mid-stream: a live draft ends here, before the run does, so
            # no edit of it reaches the editor once the run is over.
            for call in calls.values():
                with contextlib.suppress(Exception):
                    await self._abandon(call)
            raise
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
        # At the token limit, the calls whose arguments are complete JSON run, in order, up to
        # the first one that is not: that one (and any after it) was cut off.
        cut = False
        for index in sorted(calls):
            call = calls[index]
            if call.oversized:
                continue
            complete = bool(call.arguments.strip()) if finish == "length" else True
            if cut or not complete or not is_json_object(call.arguments):
                call.cut_off = True
                call.truncated = finish == "length"
                cut = cut or call.truncated
                await self._abandon(call)
        return "".join(text_parts), [calls[i] for i in sorted(calls)], usage

    # -- live plan drafts ---------------------------------------------------------------------

    async def _maybe_begin_draft(self, run_id: str, call: StreamingCall) -> None:
        # Only a call that could run: plan mode and plan_write offered in this mode.
        if call.name != "plan_write" or self.session.mode is not WorkMode.PLAN:
            return
        call.reader = PartialArgumentsReader()
        default = self.session.plan_target(self.session.plans_dir, None)
        if default.ok and default.resolved:
            call.draft_path = Path(default.resolved)
            await self.drafts.begin(run_id, call.draft_path)

    async def _feed_draft(self, call: StreamingCall, delta: str) -> None:
        if call.reader is None or call.draft_path is None:
            return
        call.reader.feed(delta)
        name = call.reader.plan_filename
        if name is not None and name != call.checked_name:
            call.checked_name = name
            target = self.session.plan_target(self.session.plans_dir, name)
            if not target.ok or target.resolved is None or Path(target.resolved) != call.draft_path:
                # The draft belongs to another (or an invalid) file: stop streaming here.
                await self._abandon(call)
                return
        self.drafts.feed(call.draft_path, delta)

    async def _abandon(self, call: StreamingCall) -> None:
        path, call.draft_path = call.draft_path, None
        if path is not None:
            await self.drafts.abandon(path)
