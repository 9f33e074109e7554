"""Responsiveness: `planLsp/state` round trips through a real stdio client while a run
streams, against the same server idle, in alternating rounds.

The streaming run is one scripted turn: a long text answer (one `planLsp/update` per
16-character delta) followed by a 20 KB `plan_write` streaming into the open PLAN.md
(coalesced `workspace/applyEdit`s, with the client's `didChange`s coming back), at 1 ms
between deltas. The client sends one `planLsp/state` request at a time, back to back.

Run: .venv/bin/python tests/bench/bench_responsiveness.py [--quick] [--smoke] [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _bench_lsp import BenchEditor, bench_server, write_script
from _bench_util import Result, emit_results, fmt, percentile, print_table
from bench_streaming import make_plan
from lsprotocol import types
from pygls.lsp.client import LanguageClient

ECHO_SERVER = """\
from typing import Any

from pygls.lsp.server import LanguageServer

server = LanguageServer("bare-pygls-echo", "0")


@server.feature("bench/echo")
def echo(ls: LanguageServer, params: Any) -> dict[str, Any]:
    return {}


server.start_io()
"""


async def pygls_floor(work: Path, count: int) -> list[float]:
    """Round trips of a trivial request to a bare pygls server: the floor of this stack."""
    script = work / "echo_server.py"
    script.write_text(ECHO_SERVER)
    client = LanguageClient("plan-lsp-bench", "1")
    await client.start_io(sys.executable, str(script))
    try:
        await client.initialize_async(
            types.InitializeParams(capabilities=types.ClientCapabilities())
        )
        client.initialized(types.InitializedParams())
        samples: list[float] = []
        for _ in range(count + 20):
            start = time.perf_counter()
            await asyncio.wait_for(client.protocol.send_request_async("bench/echo", {}), 30)
            samples.append((time.perf_counter() - start) * 1000)
        return samples[20:]
    finally:
        await asyncio.wait_for(client.shutdown_async(None), 10)
        client.exit(None)
        await client.stop()  # type: ignore[no-untyped-call]


def long_text(size: int) -> str:
    sentence = "Reading the handlers first, then the parser; the cache comes last. "
    return (sentence * (size // len(sentence) + 1))[:size]


def turns(rounds: int, text_size: int, plan_size: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for r in range(rounds):
        out.append(
            {
                "delay_ms": 1,
                "text": long_text(text_size),
                "tool_calls": [
                    {"name": "plan_write", "arguments": {"content": make_plan(plan_size, r)}}
                ],
            }
        )
        out.append({"text": "Plan written."})
    return out


async def round_trip(ed: BenchEditor) -> float:
    start = time.perf_counter()
    await ed.request("planLsp/state")
    return (time.perf_counter() - start) * 1000


async def idle_phase(ed: BenchEditor, count: int) -> list[float]:
    return [await round_trip(ed) for _ in range(count)]


async def streaming_phase(ed: BenchEditor) -> tuple[list[float], float]:
    seen = len(ed.updates)
    prompt = asyncio.ensure_future(ed.request("planLsp/prompt", {"text": "plan it"}))
    # Measure only while the model streams: from its first delta to the end of the run.
    while not prompt.done() and not any(u.get("kind") == "text" for _t, u in ed.updates[seen:]):
        await asyncio.sleep(0.001)
    started = time.perf_counter()
    samples: list[float] = []
    while not prompt.done():
        rtt = await round_trip(ed)
        if not prompt.done():
            samples.append(rtt)
    result = await prompt
    if result.get("stopReason") != "end_turn":
        print(f"warning: run ended with {result.get('stopReason')}", file=sys.stderr)
    return samples, time.perf_counter() - started


async def run(rounds: int, idle_count: int, text_size: int, plan_size: int) -> list[Result]:
    work = Path(tempfile.mkdtemp(prefix="plan-lsp-bench-resp-"))
    idle: list[float] = []
    busy: list[float] = []
    busy_s = 0.0
    try:
        ws = work / "ws"
        ws.mkdir()
        (ws / "README.md").write_text("# sample\n")
        script = write_script(work / "script.json", turns(rounds, text_size, plan_size))
        async with bench_server(ws, script, "--plan-shell", "off") as ed:
            await idle_phase(ed, 20)  # warm-up: first requests import and build things
            for _ in range(rounds):
                idle += await idle_phase(ed, idle_count)
                samples, seconds = await streaming_phase(ed)
                busy += samples
                busy_s += seconds
            idle += await idle_phase(ed, idle_count)
            updates = len(ed.updates)
            edits = len(ed.edits)
        floor = await pygls_floor(work, idle_count)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"{rounds} streaming run(s) of {text_size:,} text chars + a {plan_size:,}-char plan "
        f"({busy_s:.1f} s streaming; {updates:,} planLsp/update and {edits:,} applyEdit "
        "messages in all), alternating with idle blocks"
    )
    print_table(
        ["planLsp/state round trip (ms)", "p50", "p90", "p99", "max", "n"],
        [
            (label, fmt(percentile(v, 50)), fmt(percentile(v, 90)), fmt(percentile(v, 99)),
             fmt(max(v, default=float("nan"))), str(len(v)))
            for label, v in (
                ("idle", idle),
                ("while a run streams", busy),
                ("bare pygls, trivial request (floor)", floor),
            )
        ],
    )  # fmt: skip
    p99_ratio = percentile(busy, 99) / percentile(idle, 99)
    p50_ratio = percentile(busy, 50) / percentile(idle, 50)
    print(f"ratio streaming/idle: p50 {p50_ratio:.2f}x, p99 {p99_ratio:.2f}x")
    return [
        Result("state round trip idle p50", percentile(idle, 50), "ms", "(info)", None),
        Result("state round trip idle p99", percentile(idle, 99), "ms", "(info)", None),
        Result("state round trip streaming p50", percentile(busy, 50), "ms", "(info)", None),
        Result("state round trip streaming p99", percentile(busy, 99), "ms", "(info)", None),
        Result("state p99 streaming / idle", p99_ratio, "x", "≤ 3x", p99_ratio <= 3),
        Result("bare pygls request round trip p50", percentile(floor, 50), "ms", "(floor)", None),
    ]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--quick", action="store_true", help="one round")
    ap.add_argument("--smoke", action="store_true", help="tiny run (checks it works)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--idle", type=int, default=300, help="round trips per idle block")
    args = ap.parse_args(argv)
    if args.smoke:
        rounds, idle, text_size, plan_size = 1, 30, 2_000, 2_000
    elif args.quick:
        rounds, idle, text_size, plan_size = 1, args.idle, 24_000, 20_000
    else:
        rounds, idle, text_size, plan_size = args.rounds, args.idle, 24_000, 20_000
    emit_results(asyncio.run(run(rounds, idle, text_size, plan_size)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
