"""Plan streaming: a 20 KB plan streamed by the scripted model in 16-character deltas into an
open PLAN.md through the real server over stdio.

Measures the `workspace/applyEdit` messages and bytes the client receives (against the plan's
size and against a computed naive baseline: one whole-document replace per delta), edits per
second, and the time from a model delta to the edit that carries it — leaving the server and
arriving at the client. Delta and edit times come from the instrumented server
(`_instrumented_server.py`), on the same monotonic clock as the client's.

Run: .venv/bin/python tests/bench/bench_streaming.py [--quick] [--smoke] [--reps N]
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import random
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _bench_lsp import bench_server, write_script
from _bench_util import Result, emit_results, fmt, median, percentile, print_table

from plan_lsp.plan.streaming import PartialArgumentsReader
from plan_lsp.providers.base import ModelRequest
from plan_lsp.providers.scripted import ScriptedProvider

CHUNK = 16
WORDS = (
    "update handler config parser request module cache token schema retry timeout index "
    "buffer client server workspace document édition naïve ✓ plan step test review"
).split()


def make_plan(size: int, seed: int) -> str:
    """A Markdown plan of about `size` characters (headings, checklists, prose, some
    non-ASCII and an astral character so UTF-16 columns matter)."""
    rng = random.Random(seed)
    parts = [f"# Plan {seed}: streaming benchmark 🚀\n\n## Steps\n"]
    length = len(parts[0])
    step = 1
    while length < size:
        if step % 12 == 0:
            line = f"\n## Phase {step // 12}\n\n"
        else:
            words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14)))
            line = f"- [ ] {step}. {words.capitalize()} in `src/mod_{step}.py`.\n"
        parts.append(line)
        length += len(line)
        step += 1
    return "".join(parts)[:size].rstrip() + "\n"


def naive_bytes(arguments_json: str, chunk: int) -> int:
    """Bytes a server would send replacing the whole document on every delta."""
    reader = PartialArgumentsReader()
    total = 0
    for start in range(0, len(arguments_json), chunk):
        reader.feed(arguments_json[start : start + chunk])
        if reader.content_started:
            total += len(reader.content_so_far.encode("utf-8"))
    return total


async def provider_alone_s(script: Path) -> float:
    """The same turn played by the scripted provider alone, in-process: the pace the model
    sets, without the server (the reference for the streaming time)."""
    provider = ScriptedProvider(script)
    start = asyncio.get_running_loop().time()
    async for _event in provider.stream(ModelRequest("bench", "plan", [], [])):
        pass
    return asyncio.get_running_loop().time() - start


@dataclass
class RepResult:
    plan_bytes: int
    deltas: int
    edits: int
    server_edits: int
    edit_text_bytes: int
    wire_bytes: int
    naive_bytes: int
    stream_s: float
    alone_s: float
    mean_rate: float
    peak_rate: int
    sent_latency_ms: list[float]
    arrival_latency_ms: list[float]
    correct: bool


def peak_per_second(times: list[float]) -> int:
    best = 0
    for i, t in enumerate(times):
        best = max(best, bisect.bisect_left(times, t + 1.0) - i)
    return best


async def one_rep(work: Path, plan: str, delay_ms: int) -> RepResult:
    ws = work / "ws"
    ws.mkdir(parents=True)
    (ws / "README.md").write_text("# sample\n")
    arguments = {"content": plan}
    script = write_script(
        work / "script.json",
        [
            {
                "delay_ms": delay_ms,
                "tool_calls": [{"name": "plan_write", "arguments": arguments}],
            },
            {"text": "Plan written."},
        ],
        chunk=CHUNK,
    )
    alone = await provider_alone_s(script)
    async with bench_server(ws, script, "--plan-shell", "off") as ed:
        state = await ed.request("planLsp/state")
        await ed.request("planLsp/prompt", {"text": "plan it"})
        timings: dict[str, Any] = await ed.request("bench/timings")
        final = ed.text(state["planUri"])
    deltas = [t for t, kind, _n in timings["deltas"] if kind == "args"]
    sent = [t for t, _n in timings["edits"]]
    arrived = [e.at for e in ed.edits]
    sent_lat: list[float] = []
    arrival_lat: list[float] = []
    for t in deltas:
        j = bisect.bisect_left(sent, t)
        if j < len(sent):
            sent_lat.append((sent[j] - t) * 1000)
            if j < len(arrived):
                arrival_lat.append((arrived[j] - t) * 1000)
    span = (arrived[-1] - arrived[0]) if len(arrived) > 1 else 0.0
    return RepResult(
        plan_bytes=len(plan.encode("utf-8")),
        deltas=len(deltas),
        edits=len(ed.edits),
        server_edits=len(sent),
        edit_text_bytes=sum(e.text_bytes for e in ed.edits),
        wire_bytes=sum(ed.wire_bytes(e.params) for e in ed.edits),
        naive_bytes=naive_bytes(json.dumps(arguments), CHUNK),
        stream_s=(deltas[-1] - deltas[0]) if len(deltas) > 1 else 0.0,
        alone_s=alone,
        mean_rate=(len(arrived) - 1) / span if span > 0 else float(len(arrived)),
        peak_rate=peak_per_second(arrived),
        sent_latency_ms=sent_lat,
        arrival_latency_ms=arrival_lat,
        correct=final == plan,
    )


async def run(size: int, reps: int, delay_ms: int) -> list[Result]:
    results: list[RepResult] = []
    for rep in range(reps):
        work = Path(tempfile.mkdtemp(prefix="plan-lsp-bench-stream-"))
        try:
            results.append(await one_rep(work, make_plan(size, seed=rep), delay_ms))
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def med(attr: str) -> float:
        return median([float(getattr(r, attr)) for r in results])

    sent = [v for r in results for v in r.sent_latency_ms]
    arrival = [v for r in results for v in r.arrival_latency_ms]
    plan_bytes = med("plan_bytes")
    print(
        f"plan ≈ {fmt(plan_bytes)} bytes, {CHUNK}-char deltas, delay {delay_ms} ms, "
        f"{reps} run(s), one fresh server each; medians over runs"
    )
    print_table(
        ["quantity", "value", "x plan size"],
        [
            ("model deltas (plan_write arguments)", fmt(med("deltas")), ""),
            ("streaming time, first→last delta (s)", fmt(med("stream_s")), ""),
            ("same turn, provider alone in-process (s)", fmt(med("alone_s")), ""),
            ("applyEdit messages received", fmt(med("edits")), ""),
            ("edit text bytes sent", fmt(med("edit_text_bytes")),
             fmt(med("edit_text_bytes") / plan_bytes)),
            ("applyEdit params JSON bytes", fmt(med("wire_bytes")),
             fmt(med("wire_bytes") / plan_bytes)),
            ("naive: whole document per delta (bytes)", fmt(med("naive_bytes")),
             fmt(med("naive_bytes") / plan_bytes)),
            ("edits per second, mean", fmt(med("mean_rate")), ""),
            ("edits in the busiest second", fmt(med("peak_rate")), ""),
        ],
    )  # fmt: skip
    print()
    print_table(
        ["delta → edit (ms)", "p50", "p99", "max", "n"],
        [
            ("leaves the server", fmt(percentile(sent, 50)), fmt(percentile(sent, 99)),
             fmt(max(sent, default=float("nan"))), str(len(sent))),
            ("arrives at the client", fmt(percentile(arrival, 50)),
             fmt(percentile(arrival, 99)), fmt(max(arrival, default=float("nan"))),
             str(len(arrival))),
        ],
    )  # fmt: skip
    print("(edits are coalesced to at most one per 16.7 ms, so ~8 ms p50 is by design)")
    if not all(r.correct for r in results):
        print("ERROR: the client's PLAN.md did not end up equal to the plan", file=sys.stderr)
    bytes_ratio = med("edit_text_bytes") / plan_bytes
    peak = med("peak_rate")
    return [
        Result("streaming: edit bytes / plan size", bytes_ratio, "x", "≤ 2x", bytes_ratio <= 2),
        Result(
            "streaming: naive full-replace bytes / plan size",
            med("naive_bytes") / plan_bytes, "x", "(baseline)", None,
        ),
        Result("streaming: applyEdit messages", med("edits"), "", "(info)", None),
        Result("streaming: edits/s (busiest second)", peak, "/s", "≤ 60/s", peak <= 60),
        Result("streaming: delta→edit sent p50", percentile(sent, 50), "ms", "(info)", None),
        Result("streaming: delta→edit sent p99", percentile(sent, 99), "ms", "(info)", None),
        Result(
            "streaming: client got the exact plan", float(all(r.correct for r in results)),
            "", "1", all(r.correct for r in results),
        ),
    ]  # fmt: skip


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--quick", action="store_true", help="one run")
    ap.add_argument("--smoke", action="store_true", help="tiny plan, one run (checks it works)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--size", type=int, default=20_000, help="plan size in characters")
    ap.add_argument("--delay-ms", type=int, default=1)
    args = ap.parse_args(argv)
    reps = 1 if (args.quick or args.smoke) else args.reps
    size = 2_000 if args.smoke else args.size
    emit_results(asyncio.run(run(size, reps, args.delay_ms)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
