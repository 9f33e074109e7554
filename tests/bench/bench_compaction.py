"""What compaction saves: tokens sent per Do step over a 100-step Do run, with the context
budget (a 32,000-token window) and without it (a window so large nothing is ever compacted),
through the real server with the scripted provider. Each step reads a ~3 KB file; every tenth
rewrites the todo list. The tokens sent are what the provider reports as input (the scripted
provider reports its estimate of each request), summary requests included in the "with" run.

Run: .venv/bin/python tests/bench/bench_compaction.py [--quick] [--smoke]

Target: with compaction, at most half the tokens per step, and no request past 80% of the
window (without it the last requests are several times the window).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from _bench_lsp import bench_server, write_script
from _bench_util import Result, emit_results, fmt, print_table

from plan_lsp.providers.base import ChatMessage, ModelRequest, ToolSpec
from plan_lsp.providers.tokens import estimate_request

WINDOW = 32_000
NO_LIMIT = 100_000_000
PLAN = "# Plan\n\n1. Read every module.\n2. Note what each one does.\n"


def _turns(steps: int) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "plan_write", "arguments": {"content": PLAN}}]},
        {"tool_calls": [{"name": "exit_plan_mode", "arguments": {}}]},
    ]
    for step in range(steps - 1):
        if step % 10 == 0:
            todos = [
                {"content": f"step {i}", "status": "completed" if i < step // 10 else "pending"}
                for i in range(steps // 10)
            ]
            turns.append({"tool_calls": [{"name": "todo_write", "arguments": {"todos": todos}}]})
        else:
            path = f"module_{step % 12}.py"
            turns.append({"tool_calls": [{"name": "read_file", "arguments": {"path": path}}]})
    turns.append({"text": "done"})
    return turns


def _size(record: dict[str, Any]) -> int:
    messages = [ChatMessage.from_json(m) for m in record["messages"]]
    tools = [ToolSpec(name, "", {}) for name in record["tools"]]
    return estimate_request(ModelRequest("r", record["mode"], messages, tools))


async def _run(workspace: Path, steps: int, window: int, scratch: Path) -> dict[str, Any]:
    script = write_script(scratch / f"script-{window}.json", _turns(steps), chunk=4096)
    transcript = scratch / f"transcript-{window}.jsonl"
    args = ["--transcript", str(transcript), "--context-window", str(window)]
    args += ["--max-steps", "1000", "--plan-shell", "classified"]
    async with bench_server(workspace, script, *args) as editor:
        planned = await editor.request("planLsp/prompt", {"text": "plan it"})
        if planned["stopReason"] != "plan_submitted":
            errors = [u for _t, u in editor.updates if u.get("kind") == "error"]
            sent = transcript.read_text()[:3000] if transcript.exists() else ""
            raise SystemExit(f"the plan run ended {planned['stopReason']}: {errors}\n{sent}")
        before = (await editor.request("planLsp/state"))["usage"]
        editor.done.clear()
        await editor.request("planLsp/approvePlan", {"permissionMode": "auto_edit", "force": True})
        await asyncio.wait_for(editor.done.wait(), 600)
        after = (await editor.request("planLsp/state"))["usage"]
    records = [json.loads(line) for line in transcript.read_text().splitlines()]
    do = [r for r in records if r["mode"] == "build"]
    steps_sent = [r for r in do if r.get("purpose") != "compaction"]
    return {
        "steps": len(steps_sent),
        "input": after["inputTokens"] - before["inputTokens"],
        "largest": max(_size(r) for r in steps_sent),
        "median": statistics.median(_size(r) for r in steps_sent),
        "compactions": after["compactions"] - before["compactions"],
        "summaries": len(do) - len(steps_sent),
    }


def _workspace(path: Path) -> Path:
    """A fresh project (the session lives with it: each run starts from nothing)."""
    path.mkdir()
    line = "def function(value):  # an ordinary line of code in this module\n"
    for n in range(12):
        (path / f"module_{n}.py").write_text(line * (3_000 // len(line)))
    return path


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a 60-step run")
    ap.add_argument("--smoke", action="store_true", help="a 20-step run")
    args = ap.parse_args(argv)
    steps = 20 if args.smoke else (60 if args.quick else 100)
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        without = asyncio.run(_run(_workspace(scratch / "a"), steps, NO_LIMIT, scratch))
        with_budget = asyncio.run(_run(_workspace(scratch / "b"), steps, WINDOW, scratch))
    rows = []
    for name, run in (("without compaction", without), ("with compaction", with_budget)):
        per_step = run["input"] / max(1, run["steps"])
        rows.append((name, run["steps"], fmt(per_step, 0), fmt(run["median"], 0),
                     fmt(run["largest"], 0), run["compactions"], run["summaries"]))  # fmt: skip
    print(f"{steps}-step Do run, window {WINDOW:,} tokens (tokens sent as input)")
    print_table(
        ["run", "steps", "tokens/step", "median request", "largest request", "compactions",
         "summaries"], rows)  # fmt: skip
    with_per = with_budget["input"] / max(1, with_budget["steps"])
    without_per = without["input"] / max(1, without["steps"])
    ratio = with_per / without_per if without_per else float("nan")
    largest = with_budget["largest"] / WINDOW
    emit_results(
        [
            Result("Do step input tokens, with compaction", with_per, "tokens", "(reported)", None),
            Result("Do step input tokens, without", without_per, "tokens", "(reported)", None),
            Result(
                "tokens per step with / without compaction",
                ratio,
                "x",
                "<= 0.5",
                ratio <= 0.5 if not args.smoke else None,
            ),
            Result(
                "largest request with compaction / window", largest, "x", "<= 0.8", largest <= 0.8
            ),
        ]
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
