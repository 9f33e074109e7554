"""Agent harness overhead per model step: the real `plan_lsp.agent.loop.Agent` (request
building, streaming, tool-call parsing, the execution gate, the tool runner, conversation
persistence in SQLite, notifications) driven in-process by the scripted provider with no
delay, through in-memory editor/user/draft ports.

Each step is one model request answered with one cheap tool call. Per step:
overhead = step wall time - time inside the provider - time inside the tool.
Two tools: `todo_write` (a real built-in; its time includes saving the todo list) and a
benchmark-only no-op tool (the harness alone).

Run: .venv/bin/python tests/bench/bench_harness.py [--quick] [--smoke] [--steps N]
     [--profile]  (prints the top functions of one round by own time)
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from _bench_lsp import write_script
from _bench_util import (
    NullEditor,
    NullUser,
    Result,
    emit_results,
    fmt,
    median,
    percentile,
    print_table,
)

from plan_lsp.agent.loop import Agent, AgentPorts
from plan_lsp.config import Config
from plan_lsp.policy.safety import Safety, ToolDefinition
from plan_lsp.providers.base import ChatMessage, ModelRequest, StreamEvent
from plan_lsp.providers.scripted import ScriptedProvider
from plan_lsp.session import Session, StateStore
from plan_lsp.tools.base import Tool, ToolContext, ToolResult

NOOP_TOOL = "bench_noop"


class NullDrafts:
    async def begin(self, run_id: str, path: Path) -> None:
        return None

    def feed(self, path: Path, arguments_delta: str) -> None:
        return None

    async def abandon(self, path: Path) -> None:
        return None

    async def complete(self, path: Path, content: str) -> None:
        return None

    async def show(self, path: Path) -> None:
        return None

    def buffer_text(self, path: Path) -> str | None:
        return None


class StepClock:
    """Per-step start times and the provider/tool time spent inside each step."""

    def __init__(self) -> None:
        self.starts: list[float] = []
        self.provider: list[float] = []
        self.tool: list[float] = []

    def begin_step(self) -> None:
        self.starts.append(time.perf_counter())
        self.provider.append(0.0)
        self.tool.append(0.0)


class TimedProvider:
    """Wraps the scripted provider; time inside its stream counts as provider time."""

    name = "scripted"

    def __init__(self, inner: ScriptedProvider, clock: StepClock) -> None:
        self.inner = inner
        self.clock = clock

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.clock.begin_step()
        started = time.perf_counter()
        events = self.inner.stream(request)
        self.clock.provider[-1] += time.perf_counter() - started
        return self._timed(events)

    async def check(self) -> str:
        return await self.inner.check()

    async def context_window(self) -> int | None:
        return await self.inner.context_window()

    async def _timed(self, events: AsyncIterator[StreamEvent]) -> AsyncIterator[StreamEvent]:
        iterator = events.__aiter__()
        while True:
            started = time.perf_counter()
            try:
                event = await iterator.__anext__()
            except StopAsyncIteration:
                self.clock.provider[-1] += time.perf_counter() - started
                return
            self.clock.provider[-1] += time.perf_counter() - started
            yield event


def timed_tool(tool: Tool, clock: StepClock) -> Tool:
    async def run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        started = time.perf_counter()
        try:
            return await tool.run(args, ctx)
        finally:
            clock.tool[-1] += time.perf_counter() - started

    return Tool(tool.definition, run)


async def noop(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    return ToolResult(content="ok")


NOOP = Tool(
    ToolDefinition(
        name=NOOP_TOOL,
        description="Does nothing (benchmark).",
        input_schema={
            "type": "object",
            "properties": {"note": {"type": "string"}},
            "additionalProperties": False,
        },
        safety=Safety.READ_ONLY,
        timeout_s=10.0,
    ),
    noop,
)


def step_turns(tool: str, steps: int) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = []
    for i in range(steps):
        if tool == "todo_write":
            args: dict[str, Any] = {
                "todos": [
                    {"content": f"step {i}: read the parser", "status": "completed"},
                    {"content": f"step {i}: write the plan", "status": "in_progress"},
                ]
            }
        else:
            args = {"note": f"step {i}"}
        turns.append({"text": "Next.", "tool_calls": [{"name": tool, "arguments": args}]})
    turns.append({"text": "Done."})
    return turns


async def one_round(work: Path, tool: str, steps: int) -> tuple[list[float], StepClock, float]:
    ws = work / "ws"
    ws.mkdir(parents=True)
    script = write_script(work / "script.json", step_turns(tool, steps))
    store = StateStore(ws / ".plan-lsp" / "state.db")
    session = Session(store, ws, ws / ".plan-lsp" / "plans")
    config = Config(provider="scripted", script=script, max_steps=min(1000, steps + 5))
    clock = StepClock()
    notices: list[dict[str, Any]] = []
    agent = Agent(
        session,
        TimedProvider(ScriptedProvider(script), clock),
        config,
        AgentPorts(NullEditor(), NullUser(), NullDrafts(), notices.append),
        "off",
    )
    agent.registry.register(NOOP)
    for name in ("todo_write", NOOP_TOOL):
        original = agent.registry.get(name)
        assert original is not None
        agent.registry.register(timed_tool(original, clock), replace=True)
    started = time.perf_counter()
    result = await agent.run("bench", ChatMessage(role="user", content="go"), asyncio.Event())
    ended = time.perf_counter()
    store.close()
    if result.stop_reason != "end_turn" or len(clock.starts) != steps + 1:
        raise RuntimeError(f"run ended {result.stop_reason} after {len(clock.starts)} requests")
    errors = [n for n in notices if n.get("kind") == "toolResult" and n.get("isError")]
    if errors:
        raise RuntimeError(f"tool calls failed: {errors[0]}")
    bounds = [*clock.starts, ended]
    overhead = [
        (bounds[i + 1] - bounds[i] - clock.provider[i] - clock.tool[i]) * 1000
        for i in range(steps)  # the closing text-only step is not a tool step
    ]
    return overhead, clock, ended - started


async def measure(tool: str, steps: int, rounds: int) -> dict[str, float]:
    overhead: list[float] = []
    provider: list[float] = []
    tool_ms: list[float] = []
    wall: list[float] = []
    for _ in range(rounds):
        work = Path(tempfile.mkdtemp(prefix="plan-lsp-bench-harness-"))
        try:
            values, clock, seconds = await one_round(work, tool, steps)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        overhead += values
        provider += [p * 1000 for p in clock.provider[:steps]]
        tool_ms += [t * 1000 for t in clock.tool[:steps]]
        wall.append(seconds * 1000 / (steps + 1))
    return {
        "wall": median(wall),
        "provider": median(provider),
        "tool": median(tool_ms),
        "p50": percentile(overhead, 50),
        "p99": percentile(overhead, 99),
        "mean": sum(overhead) / len(overhead),
    }


def profile(steps: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="plan-lsp-bench-harness-"))
    profiler = cProfile.Profile()
    try:
        profiler.enable()
        asyncio.run(one_round(work, "todo_write", steps))
        profiler.disable()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    stats = pstats.Stats(profiler)
    stats.sort_stats("tottime").print_stats(25)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--quick", action="store_true", help="fewer steps, one round")
    ap.add_argument("--smoke", action="store_true", help="tiny run (checks it works)")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args(argv)
    steps, rounds = args.steps, args.rounds
    if args.quick:
        steps, rounds = 100, 1
    if args.smoke:
        steps, rounds = 20, 1
    if args.profile:
        profile(steps)
        return 0
    asyncio.run(measure("todo_write", 10, 1))  # warm-up: imports, first-use caches
    rows = {tool: asyncio.run(measure(tool, steps, rounds)) for tool in ("todo_write", NOOP_TOOL)}
    print(f"{steps} steps x {rounds} round(s), one tool call per step, scripted provider, no delay")
    print_table(
        ["per step (ms)", "wall", "provider", "tool", "overhead p50", "overhead p99", "mean"],
        [
            (tool, fmt(r["wall"]), fmt(r["provider"]), fmt(r["tool"]), fmt(r["p50"]),
             fmt(r["p99"]), fmt(r["mean"]))
            for tool, r in rows.items()
        ],
    )  # fmt: skip
    todo = rows["todo_write"]
    bare = rows[NOOP_TOOL]
    return_results = [
        Result("harness overhead/step p50 (todo_write)", todo["p50"], "ms", "≤ 2 ms",
               todo["p50"] <= 2),
        Result("harness overhead/step p99 (todo_write)", todo["p99"], "ms", "(info)", None),
        Result("harness overhead/step p50 (no-op tool)", bare["p50"], "ms", "(info)", None),
    ]  # fmt: skip
    emit_results(return_results)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
