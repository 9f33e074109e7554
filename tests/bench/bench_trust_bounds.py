"""What untrusted input can cost (docs/security.md, section 10), measured:

- permission decisions: one rule on a 64 KiB command; 100 rules of 32 wildcards whose
  literals all occur in a 64 KiB command (the worst a repository and a model can build
  together); 100 rules of 26 x `**/`;
- MCP answers through the real server (the official SDK's server, `tests/mcp_servers/`):
  the time of the prompt whose one call answers N characters, and the longest
  `planLsp/state` answer meanwhile (a 50 M-character answer is ~100 MB on the wire: it is
  refused unread by the relay).

Run: .venv/bin/python tests/bench/bench_trust_bounds.py [--no-mcp]
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from plan_lsp.policy.glob_match import compile_glob_set
from plan_lsp.policy.permissions import MAX_MATCHED_CHARS, PermissionEngine
from plan_lsp.policy.safety import PrimaryArgument, Safety, ToolDefinition
from plan_lsp.protocol.state import PermissionMode, WorkMode

BASH = ToolDefinition(
    name="bash",
    description="bash",
    input_schema={"type": "object"},
    safety=Safety.SIDE_EFFECT,
    classified_per_call=True,
    primary_argument=PrimaryArgument(name="command", kind="command"),
)


def decide_ms(deny: list[str], command: str) -> tuple[str, float]:
    engine = PermissionEngine(deny=deny, workspace_roots=[Path(tempfile.gettempdir())])
    engine.decide(  # compile once
        BASH, {"command": "x"}, permission_mode=PermissionMode.YOLO, work_mode=WorkMode.BUILD
    )
    start = time.perf_counter()
    decision = engine.decide(
        BASH, {"command": command}, permission_mode=PermissionMode.YOLO, work_mode=WorkMode.BUILD
    )
    return decision.verdict, (time.perf_counter() - start) * 1000


def rules() -> None:
    print("permission decisions")
    cases: list[tuple[str, list[str], str]] = []
    one = ("1 rule `*rm -rf*zz`, 64 KiB", ["bash(*rm -rf*zz)"], "zz rm -rf " + "x" * 65_000)
    cases.append(one)
    wide, literals = [], []
    for i in range(100):
        parts = [f"L{i:03d}{j:02d}" for j in range(31)]
        literals += parts
        wide.append("bash(*" + "*".join(parts) + "*zz)")
    body = "echo zz " + " ".join(literals) + " "
    cases.append(
        ("100 rules x 32 wildcards, 64 KiB", wide, body + "x" * (MAX_MATCHED_CHARS - len(body)))
    )
    slashes = ["bash(" + "**/" * 26 + f"x{i})" for i in range(100)]
    words = "echo " + " ".join(f"x{i}" for i in range(100)) + " "
    cases.append(
        (
            "100 rules x 26 `**/`, 64 KiB",
            slashes,
            words + "a/" * ((MAX_MATCHED_CHARS - len(words)) // 2),
        )
    )
    for label, deny, command in cases:
        verdict, ms = decide_ms(deny, command)
        globs = compile_glob_set(tuple(r[5:-1] for r in deny), path_mode=False)
        globs.matching("x")
        start = time.perf_counter()
        globs.matching(command)
        match_ms = (time.perf_counter() - start) * 1000
        print(f"  {label}: {verdict} in {ms:.0f} ms (the glob matching: {match_ms:.1f} ms)")


async def mcp_answer(size: int) -> None:
    from tests.e2e.scripts import sample_project, scripted_args, write_script
    from tests.lsp_harness import running_server
    from tests.mcp_servers import sdk_command

    tmp = Path(tempfile.mkdtemp())
    ws = sample_project(tmp / "ws")
    config = tmp / "user.toml"
    config.write_text(
        f'[[mcp.servers]]\nname = "sdk"\ncommand = {json.dumps(sdk_command())}\n'
        'read_only_tools = ["big"]\ntimeout_s = 600\n'
    )

    def call(n: int) -> dict[str, object]:
        return {"tool_calls": [{"name": "mcp__sdk__big", "arguments": {"size": n}}]}

    turns = [call(10), {"text": "warm"}, call(size), {"text": "done"}]
    script = write_script(tmp / "script.json", turns)
    transcript = tmp / "t.jsonl"
    env = {"PLAN_LSP_CONFIG": str(config)}
    async with running_server([ws], *scripted_args(script, transcript), env=env) as ed:
        await ed.request("planLsp/prompt", {"text": "warm"}, timeout=300)
        latencies: list[float] = []
        start = time.monotonic()
        task = asyncio.ensure_future(ed.request("planLsp/prompt", {"text": "go"}, timeout=300))
        while not task.done():
            asked = time.monotonic()
            await ed.request("planLsp/state", {}, timeout=60)
            latencies.append(time.monotonic() - asked)
        await task
        total = time.monotonic() - start
    last = json.loads(transcript.read_text().splitlines()[-1])
    seen = [m["content"] for m in last["messages"] if m["role"] == "tool"][-1]
    outcome = "refused: " + json.loads(seen)["error"] if seen.startswith("{") else "read"
    print(
        f"  {size:,} characters: {outcome}; prompt {total:.2f} s, longest state answer "
        f"{max(latencies) * 1000:.0f} ms over {len(latencies)}"
    )


def main() -> None:
    rules()
    if "--no-mcp" not in sys.argv:
        print("MCP answers (official SDK server, through the real language server)")
        for size in (1_000, 4_000_000, 50_000_000):
            asyncio.run(mcp_answer(size))


if __name__ == "__main__":
    main()
