"""Streaming at the speed of a real model, for every editor's end-to-end test.

A hosted or local model streams about 1 KB/s in uneven pieces with pauses; a scripted
provider that hands over a whole plan at once never exercises the document model. Every
editor's e2e streams its plans with `MODEL_PACE`, records the PLAN.md buffer on each change as
`(wall-clock seconds, full text)`, and checks with `stream_report` that the plan *grew* in the
buffer while the model streamed it. The longest visible stall is reported here and measured
against its target in `tests/bench/bench_plan_stall.py` (never asserted in a test).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from plan_lsp.plan.streaming import PartialArgumentsReader

# ~1 KB/s in 1-40 character deltas, ±50% per gap, a 0.4-1.2 s pause every 300-700 characters
# (longer than Neovim's 150 ms didChange debounce and eglot's idle time).
MODEL_PACE: dict[str, Any] = {
    "chars_per_second": 1000,
    "chunk": [1, 40],
    "jitter": 0.5,
    "pause_every_chars": [300, 700],
    "pause_ms": [400, 1200],
    "seed": 7,
}


def _plan(title: str, closing: str) -> str:
    steps = [
        "Read `hello.py` and confirm the greeting is printed once, at import time.",
        "Change the greeting in `hello.py` from `hi` to `hello, world`.",
        "Check that nothing else prints: search the project for other `print` calls.",
        "Leave the README as it is; it does not quote the greeting.",
        "Run the module once to see the new greeting (build mode only).",
    ]
    body = [f"# Plan: {title}", "", "## Context", ""]
    body.append(
        "The project is one module, `hello.py`, that prints a greeting when it runs. The "
        "user wants the greeting to be polite. Nothing imports the module, and no test "
        "checks its output, so the change is local to one line."
    )
    body += ["", "## Steps", ""]
    body += [f"{n}. {step}" for n, step in enumerate(steps, 1)]
    body += ["", "## Risks", ""]
    body.append(
        "- A script elsewhere might parse the old greeting: the search in step 3 finds it.\n"
        "- Unicode: the new greeting is plain ASCII, so no encoding changes are needed.\n"
        "- Line endings: the file keeps its own; the edit touches one line only."
    )
    body += ["", "## Notes", ""]
    body += [
        f"- Note {n}: this plan is long enough to stream for a few seconds at a model's "
        f"speed, with pauses, so an editor shows it growing line by line ({n})."
        for n in range(1, 13)
    ]
    body += ["", closing, ""]
    return "\n".join(body)


LONG_PLAN = _plan("greet politely", "Nothing else changes.")
LONG_REVISED_PLAN = _plan(
    "greet politely (revised)", "Nothing else changes: every other file stays as it is."
)


def paced_script(
    turns: list[dict[str, Any]], timeline: Path, pace: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {"chunk": 16, "pace": pace or MODEL_PACE, "timeline": str(timeline), "turns": turns}


def write_paced_script(
    path: Path, turns: list[dict[str, Any]], timeline: Path, pace: dict[str, Any] | None = None
) -> Path:
    path.write_text(json.dumps(paced_script(turns, timeline, pace)))
    return path


@dataclass(frozen=True)
class Emission:
    """When the model had streamed the first `chars` characters of a plan's content."""

    t: float
    plan: str
    chars: int


def plan_emissions(timeline: Path, script: Path) -> list[Emission]:
    """Every `plan_write` delta of the script's turns as the content it completed, in time."""
    data = json.loads(script.read_text())
    turns = data["turns"]
    out: list[Emission] = []
    lines = timeline.read_text().splitlines() if timeline.exists() else []
    for line in lines:
        event = json.loads(line)
        if event["kind"] != "args":
            continue
        call = turns[event["turn"] - 1]["tool_calls"][event["call"]]
        if call["name"] != "plan_write":
            continue
        args = call["arguments"]
        text = args if isinstance(args, str) else json.dumps(args)
        # Read from the start each time: plans are a few kilobytes.
        reader = PartialArgumentsReader()
        reader.feed(text[: event["sent"]])
        content = json.loads(text).get("content", "")
        out.append(Emission(event["t"], content, len(reader.content_so_far)))
    return out


def _shown(buffer_text: str, plan: str) -> int:
    """How much of `plan`'s beginning the buffer shows (line endings as "\\n")."""
    text = buffer_text.replace("\r\n", "\n")
    limit = min(len(text), len(plan))
    index = 0
    while index < limit and text[index] == plan[index]:
        index += 1
    return index


@dataclass(frozen=True)
class StreamReport:
    # Distinct texts the buffer showed that were a growing, incomplete part of a plan.
    growing_states: dict[str, int]
    # The longest time a character the model had streamed waited to appear in the buffer.
    longest_stall_s: float
    # Characters of a plan that never appeared before the next plan (or the end).
    never_shown: dict[str, int]


def stream_report(
    buffer_events: list[tuple[float, str]], timeline: Path, script: Path
) -> StreamReport:
    """What the user saw of each plan the model streamed, against when the model streamed it.

    `buffer_events`: `(time.time(), full buffer text)` on each change of the plan buffer.
    """
    emissions = plan_emissions(timeline, script)
    plans: list[str] = []
    for emission in emissions:
        if not plans or plans[-1] != emission.plan:
            plans.append(emission.plan)
    growing: dict[str, int] = {}
    never: dict[str, int] = {}
    stall = 0.0
    events = sorted(buffer_events)
    starts = [next(e.t for e in emissions if e.plan == plan) for plan in plans]
    for number, plan in enumerate(plans):
        mine = [e for e in emissions if e.plan == plan]
        start = starts[number]
        # This plan's part of the record: from its first delta until the next plan's (a
        # revision shares the plan's opening; its states are its own).
        end = starts[number + 1] if number + 1 < len(plans) else float("inf")
        window = [(t, text) for t, text in events if start <= t < end]
        states = {text for _t, text in window if 0 < _shown(text, plan) < len(plan)}
        growing[plan[:40]] = len(states)
        # For each delta: the first buffer change at or after it that shows its characters.
        shown_at = [(t, _shown(text, plan)) for t, text in window]
        missing = 0
        for emission in mine:
            seen = next((t for t, n in shown_at if n >= emission.chars), None)
            if seen is None:
                missing = max(missing, emission.chars)
                continue
            stall = max(stall, seen - emission.t, 0.0)
        never[plan[:40]] = missing
    report = StreamReport(growing, stall, never)
    _record(report)
    return report


# `tests/bench/bench_plan_stall.py` runs the editors' tests with this set: each report is
# appended there, labelled with the test that made it.
STALL_REPORT_ENV = "PLAN_LSP_STALL_REPORT"


def _record(report: StreamReport) -> None:
    path = os.environ.get(STALL_REPORT_ENV)
    if not path:
        return
    test = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0]
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps({"test": test, **asdict(report)}) + "\n")
