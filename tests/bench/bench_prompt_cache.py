"""What prompt caching saves: a 100-step Do run (scripted reads of ~3 KB files, a 32,000-token
window) through the real server and the real providers, against two loopback model servers
that keep a prompt cache and report it as the real ones do:

- one billing like Anthropic: a cache entry is written at each `cache_control` breakpoint a
  request carries (1.25x the input price), read back when a later request's prefix up to a
  breakpoint (or up to 20 blocks before one) was written (0.1x), the rest at 1x; reported as
  `cache_read_input_tokens` / `cache_creation_input_tokens`. "Without breakpoints" bills the
  same requests as sent before plan-lsp marked any: everything at 1x.
- one caching like llama.cpp: the longest common prefix of the rendered prompt with the
  previous one is reused, reported as `timings.cache_n` (and `prompt_tokens_details`).

Tokens are counted as characters / 4. Reports billed input tokens per step, the cached share
of the input over the run, and that plan-lsp's `cachedInputTokens` equals what the servers
reported.

Run: .venv/bin/python tests/bench/bench_prompt_cache.py [--quick] [--smoke]

Targets: cached share >= 80% of the input tokens (both servers); billed input with breakpoints
<= 30% of billed input without.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _bench_lsp import bench_server, write_script
from _bench_util import REPO, Result, emit_results, fmt, print_table

sys.path.insert(0, str(REPO))
from tests.fake_model_servers import (
    FakeModelServer,
    ModelReply,
    RecordedRequest,
    ReplyToolCall,
)

WINDOW = 32_000
PLAN = "# Plan\n\n1. Read every module.\n2. Note what each one does.\n"
LOOKBACK_BLOCKS = 20  # Anthropic looks this many blocks back from a breakpoint for a hit


def tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def _turns(steps: int) -> list[ModelReply]:
    """The model's answers: a plan, then `steps` Do steps (reads; every tenth a todo list)."""
    turns = [
        ModelReply(tool_calls=[ReplyToolCall("plan_write", {"content": PLAN})]),
        ModelReply(tool_calls=[ReplyToolCall("exit_plan_mode", {})]),
    ]
    for step in range(steps - 1):
        if step % 10 == 0:
            todos = [
                {"content": f"step {i}", "status": "completed" if i < step // 10 else "pending"}
                for i in range(steps // 10)
            ]
            call = ReplyToolCall("todo_write", {"todos": todos})
        else:
            call = ReplyToolCall("read_file", {"path": f"module_{step % 12}.py"})
        turns.append(ModelReply(tool_calls=[call]))
    turns.append(ModelReply(text="done"))
    return turns


@dataclass
class Step:
    total: int
    read: int
    write: int
    mode: str

    @property
    def billed(self) -> float:
        return (self.total - self.read - self.write) + 1.25 * self.write + 0.1 * self.read


@dataclass
class CachingServer:
    """The responder of a loopback server: scripted answers, and a prompt cache."""

    kind: str  # "anthropic" | "lcp"
    turns: list[ModelReply]
    steps: list[Step] = field(default_factory=list)
    # Cached input tokens reported over the whole session (the plan run included).
    reported: int = 0
    written: set[str] = field(default_factory=set)
    previous: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, request: RecordedRequest) -> ModelReply:
        body = request.body
        with self.lock:
            if not body.get("tools"):  # a compaction's summary request
                reply = ModelReply(text="Summary: the modules were read one by one.")
            else:
                reply = self.turns.pop(0) if self.turns else ModelReply(text="done")
            mode = "summary" if not body.get("tools") else "step"
            if self.kind == "anthropic":
                step = self._anthropic(body, mode)
                reply.input_tokens = step.total - step.read - step.write
                reply.cache_read, reply.cache_write = step.read, step.write
            else:
                step = self._lcp(body, mode)
                reply.input_tokens, reply.cache_read = step.total, step.read
                reply.timings = {"cache_n": step.read, "prompt_n": step.total - step.read}
            self.steps.append(step)
            self.reported += step.read
        reply.output_tokens = 20
        return reply

    def _anthropic(self, body: dict[str, Any], mode: str) -> Step:
        blocks: list[tuple[str, bool]] = []  # (block text without its marks, breakpoint)

        def add(block: dict[str, Any]) -> None:
            mark = "cache_control" in block
            plain = {k: v for k, v in block.items() if k != "cache_control"}
            blocks.append((json.dumps(plain, sort_keys=True), mark))

        for tool in body.get("tools") or []:
            add(tool)
        system = body.get("system") or []
        for block in [{"type": "text", "text": system}] if isinstance(system, str) else system:
            add(block)
        for turn in body["messages"]:
            content = turn["content"]
            for block in (
                [{"type": "text", "text": content}] if isinstance(content, str) else content
            ):
                add({**block, "_role": turn["role"]})
        prefix, hashes, counts, running = hashlib.sha256(), [], [], 0
        for text, _mark in blocks:
            prefix.update(text.encode())
            hashes.append(prefix.copy().hexdigest())
            running += tokens(text)
            counts.append(running)
        marks = [i for i, (_text, mark) in enumerate(blocks) if mark]
        read = 0
        for mark in marks:
            for j in range(mark, max(-1, mark - LOOKBACK_BLOCKS), -1):
                if hashes[j] in self.written:
                    read = max(read, counts[j])
                    break
        end = counts[marks[-1]] if marks else 0
        self.written.update(hashes[m] for m in marks)
        return Step(running, read, max(0, end - read), mode)

    def _lcp(self, body: dict[str, Any], mode: str) -> Step:
        parts = [json.dumps(body.get("tools") or [], sort_keys=True)]
        for message in body["messages"]:
            parts.append(f"<|{message['role']}|>{json.dumps(message, sort_keys=True)}<|end|>")
        prompt = "".join(parts)
        same = 0
        for a, b in zip(prompt, self.previous, strict=False):
            if a != b:
                break
            same += 1
        self.previous = prompt
        return Step(tokens(prompt), min(tokens(prompt), same // 4), 0, mode)


def _workspace(path: Path) -> Path:
    path.mkdir()
    line = "def function(value):  # an ordinary line of code in this module\n"
    for n in range(12):
        (path / f"module_{n}.py").write_text(line * (3_000 // len(line)))
    return path


async def _run(kind: str, steps: int, scratch: Path) -> tuple[CachingServer, dict[str, Any]]:
    caching = CachingServer(kind, _turns(steps))
    workspace = _workspace(scratch / kind)
    script = write_script(scratch / "unused.json", [])
    with FakeModelServer(responder=caching) as server:
        server.models = ["bench-model"]
        provider = "anthropic" if kind == "anthropic" else "openai"
        base = server.anthropic_base_url if kind == "anthropic" else server.openai_base_url
        args = ["--provider", provider, "--base-url", base, "--model", "bench-model",
                "--context-window", str(WINDOW), "--max-steps", "1000",
                "--plan-shell", "classified"]  # fmt: skip
        async with bench_server(workspace, script, *args) as editor:
            planned = await editor.request("planLsp/prompt", {"text": "plan it"})
            if planned["stopReason"] != "plan_submitted":
                errors = [u for _t, u in editor.updates if u.get("kind") == "error"]
                raise SystemExit(f"the plan run ended {planned['stopReason']}: {errors}")
            before = len(caching.steps)
            editor.done.clear()
            await editor.request(
                "planLsp/approvePlan", {"permissionMode": "auto_edit", "force": True}
            )
            await asyncio.wait_for(editor.done.wait(), 900)
            usage = (await editor.request("planLsp/state"))["usage"]
    caching.steps = caching.steps[before:]
    return caching, usage


def _summary(run: CachingServer) -> dict[str, float]:
    total = sum(s.total for s in run.steps)
    return {
        "requests": len(run.steps),
        "summaries": sum(1 for s in run.steps if s.mode == "summary"),
        "input": total,
        "cached": sum(s.read for s in run.steps) / total if total else math.nan,
        "billed": sum(s.billed for s in run.steps),
    }


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a 50-step run")
    ap.add_argument("--smoke", action="store_true", help="a 12-step run")
    ap.add_argument("--dump", type=Path, help="write every request's figures here (JSON)")
    args = ap.parse_args(argv)
    steps = 12 if args.smoke else (50 if args.quick else 100)
    with tempfile.TemporaryDirectory() as tmp:
        anthropic, a_usage = asyncio.run(_run("anthropic", steps, Path(tmp)))
        lcp, l_usage = asyncio.run(_run("lcp", steps, Path(tmp)))
    a, lc = _summary(anthropic), _summary(lcp)
    if args.dump is not None:
        steps_of = {"anthropic": anthropic.steps, "lcp": lcp.steps}
        dumped = {k: [vars(s) for s in v] for k, v in steps_of.items()}
        args.dump.write_text(json.dumps(dumped))
    print(f"{steps}-step Do run, window {WINDOW:,} tokens; input tokens billed per request")
    rows = []
    for i in range(0, len(anthropic.steps), max(1, len(anthropic.steps) // 20)):
        s = anthropic.steps[i]
        l_step = lcp.steps[i] if i < len(lcp.steps) else None
        rows.append((i + 1, s.mode, fmt(s.total, 0), fmt(s.total, 0), fmt(s.billed, 0),
                     fmt(s.read, 0), fmt(s.write, 0),
                     fmt(l_step.read / l_step.total if l_step else math.nan)))  # fmt: skip
    print_table(
        ["request", "kind", "input", "billed without", "billed with", "read", "written",
         "llama.cpp cached"], rows)  # fmt: skip
    ratio = a["billed"] / a["input"] if a["input"] else math.nan
    print(
        f"\nAnthropic-like: {a['requests']} requests ({a['summaries']} summaries), "
        f"{fmt(a['input'], 0)} input tokens; billed {fmt(a['billed'], 0)} with breakpoints, "
        f"{fmt(a['input'], 0)} without ({fmt(ratio)}x); cached share {fmt(a['cached'])}"
    )
    print(
        f"llama.cpp-like: {lc['requests']} requests ({lc['summaries']} summaries), "
        f"{fmt(lc['input'], 0)} input tokens; cached share {fmt(lc['cached'])}"
    )
    a_counted, l_counted = a_usage["cachedInputTokens"], l_usage["cachedInputTokens"]
    a_sent, l_sent = anthropic.reported, lcp.reported
    print(f"cachedInputTokens counted by plan-lsp / reported by the server: {a_counted:,} / "
          f"{a_sent:,} (Anthropic-like), {l_counted:,} / {l_sent:,} (llama.cpp-like)")  # fmt: skip
    smoke = args.smoke
    n = max(1, a["requests"])
    emit_results(
        [
            Result("Anthropic-like: billed input tokens per Do request", a["billed"] / n, "tokens",
                   "(reported)", None),
            Result("Anthropic-like: the same, without breakpoints (before)", a["input"] / n,
                   "tokens", "(baseline)", None),
            Result("Anthropic-like: cached share of Do input", a["cached"] * 100, "%", ">= 80%",
                   None if smoke else a["cached"] >= 0.8),
            Result("Anthropic-like: billed input / without breakpoints", ratio, "x", "<= 0.30",
                   None if smoke else ratio <= 0.30),
            Result("llama.cpp-like: cached share of Do input", lc["cached"] * 100, "%", ">= 80%",
                   None if smoke else lc["cached"] >= 0.8),
            Result("cached input counted / reported by the servers",
                   (a_counted + l_counted) / max(1, a_sent + l_sent), "x", "1",
                   a_counted == a_sent and l_counted == l_sent),
        ]
    )  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
