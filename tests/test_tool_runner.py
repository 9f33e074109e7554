"""The runner's view of calls in flight: a switch to plan mode stops every call that changes
the workspace and waits for it; read-only calls run on."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from plan_lsp.policy.execution import GateDecision
from plan_lsp.policy.safety import Safety, ToolDefinition
from plan_lsp.protocol.state import WorkMode
from plan_lsp.tools.base import Tool, ToolContext, ToolResult
from plan_lsp.tools.registry import ToolRegistry
from plan_lsp.tools.runner import ToolRunner


class _Gate:
    def __init__(self) -> None:
        self.mode = WorkMode.BUILD

    async def check(self, *args: Any) -> GateDecision:
        return GateDecision(True)

    def current_mode(self) -> WorkMode:
        return self.mode


def _tool(name: str, safety: Safety, started: asyncio.Event, *, obeys_cancel: bool) -> Tool:
    async def run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        started.set()
        if obeys_cancel:
            await ctx.cancel.wait()
            return ToolResult.error("cancelled", "noticed the signal")
        await asyncio.Event().wait()  # ignores the signal: only task cancellation stops it
        return ToolResult(content="never")

    schema = {"type": "object", "properties": {}}
    return Tool(
        ToolDefinition(name=name, description=name, input_schema=schema, safety=safety), run
    )


def _ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(
        workspace_roots=[tmp_path],
        plans_dir=tmp_path / "plans",
        run_id="r1",
        editor=None,  # type: ignore[arg-type]
        user=None,  # type: ignore[arg-type]
        emit=lambda kind, payload: None,
    )


async def test_stop_side_effects_stops_and_waits(tmp_path: Path) -> None:
    started = {n: asyncio.Event() for n in ("polite", "stubborn", "reader")}
    registry = ToolRegistry(
        [
            _tool("polite", Safety.SIDE_EFFECT, started["polite"], obeys_cancel=True),
            _tool("stubborn", Safety.SIDE_EFFECT, started["stubborn"], obeys_cancel=False),
            _tool("reader", Safety.READ_ONLY, started["reader"], obeys_cancel=True),
        ]
    )
    runner = ToolRunner(registry, _Gate())
    calls = {n: asyncio.ensure_future(runner.call(n, "{}", _ctx(tmp_path))) for n in started}
    await asyncio.wait_for(asyncio.gather(*(e.wait() for e in started.values())), 5)
    stopped = await asyncio.wait_for(runner.stop_side_effects("plan mode now"), 10)
    assert sorted(c.tool for c in stopped) == ["polite", "stubborn"]
    for name in ("polite", "stubborn"):
        result = await asyncio.wait_for(calls[name], 5)
        assert result.is_error and "plan mode now" in result.content
    assert not calls["reader"].done()
    calls["reader"].cancel()


async def test_bash_in_plan_mode_is_not_a_side_effect(tmp_path: Path) -> None:
    started = asyncio.Event()
    tool = _tool("bash", Safety.SIDE_EFFECT, started, obeys_cancel=True)
    tool = Tool(tool.definition.model_copy(update={"classified_per_call": True}), tool.run)
    gate = _Gate()
    gate.mode = WorkMode.PLAN
    runner = ToolRunner(ToolRegistry([tool]), gate)
    call = asyncio.ensure_future(runner.call("bash", "{}", _ctx(tmp_path)))
    await asyncio.wait_for(started.wait(), 5)
    assert await runner.stop_side_effects("x") == []
    call.cancel()
