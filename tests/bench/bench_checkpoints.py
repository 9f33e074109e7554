"""What a checkpoint costs: the checkpoint store (`plan_lsp.session.checkpoints`) against
`git add -A && git write-tree` into a separate GIT_DIR with its own index (what a shadow-git
checkpoint does), both on the same generated workspace (20,000 text files, ~230 MB, made in
a temporary directory and removed afterwards), in the same run, page cache warm.

Measured: the first checkpoint (every file read, hashed, compressed and stored; git: the
first add), a later checkpoint after 10 files changed (p50 over the rounds; git: add -A +
write-tree after the same changes), and a revert of those 10 files to the checkpoint before
them (and the redo), which scan the tree before and after.

Run: .venv/bin/python tests/bench/bench_checkpoints.py [--quick] [--smoke] [--files N] [--rounds N]

Then a Do run through the real server (the instrumented `plan-lsp serve`, scripted model) on
the same workspace: a plan submitted (the store reads the workspace ahead while the user reads
the plan; the bench approves once it has), then edits, a file written and three commands (a
grep over a thousand files, a compile of a thousand, a one-file check); the time its
checkpoints took against the time its side-effect tool calls took.

Targets: a later checkpoint ≤ 100 ms p50 and ≤ 1.5x git; the first ≤ 1.5x git; a Do run's
checkpoints ≤ 5% of its tool time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _bench_lsp import bench_server, write_script
from _bench_util import Result, emit_results, fmt, median, print_table
from lsprotocol import types

from plan_lsp.session.checkpoints import AFTER, CheckpointStore

PLAN = (
    "# Plan: polite greeting\n\n- [ ] Change the greeting in `hello.py`.\n"
    "- [ ] Write `notes.txt`.\n- [ ] Check that `pkg00` still compiles.\n"
)


def tool_turn(name: str, **arguments: object) -> dict[str, object]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


async def do_run(ws: Path, work: Path) -> tuple[list[float], list[float], float]:
    """One Do run through the real server on `ws`: (checkpoint seconds, tool seconds, and
    the read-ahead's seconds while the plan awaited approval)."""
    (ws / "hello.py").write_text("print('hi')\n")
    turns = [
        tool_turn("plan_write", content=PLAN), tool_turn("exit_plan_mode"),
        tool_turn("bash", command="grep -rl 'parser cache' pkg00 | wc -l"),
        tool_turn("edit_file", path="hello.py", old_text="'hi'", new_text="'hello, world'"),
        tool_turn("write_file", path="notes.txt", content="polite now\n"),
        tool_turn("bash", command="python3 -m compileall -q pkg00 && echo compiled"),
        tool_turn("bash", command="python3 -m py_compile hello.py && echo ok"),
        {"text": "Done."},
    ]  # fmt: skip
    script = write_script(work / "script.json", turns)
    os.environ["PLAN_LSP_STATE_DIR"] = str(work / "state")
    async with bench_server(ws, script, "--plan-shell", "classified") as editor:
        await editor.request("planLsp/prompt", {"text": "Make the greeting polite"}, 600)
        # The user reads the plan while the store reads the workspace ahead.
        deadline = time.monotonic() + 600
        while not (await editor.request("bench/timings", {}))["primes"]:
            if time.monotonic() > deadline:
                raise SystemExit("the store never read the workspace ahead")
            await asyncio.sleep(0.2)  # polling what the server has done; nothing races
        editor.done.clear()
        approve = {"permissionMode": "yolo", "force": True}
        command = types.ExecuteCommandParams(command="planLsp.approvePlan", arguments=[approve])
        await editor.request("workspace/executeCommand", command, 600)
        await asyncio.wait_for(editor.done.wait(), 600)
        timings = await editor.request("bench/timings", {})
    if "hello, world" not in (ws / "hello.py").read_text():
        raise SystemExit("the Do run did not change hello.py: the measurement is void")
    return timings["checkpoints"], timings["tools"], sum(timings["primes"])

WORDS = "request handler parser cache token schema config buffer client index value".split()


def generate(root: Path, files: int, file_bytes: int) -> int:
    """`files` text files of about `file_bytes` each, 50 to a folder; the total bytes."""
    rng = random.Random(7)
    lines = [f"    {' '.join(rng.choices(WORDS, k=8))} = {i}\n" for i in range(4096)]
    corpus = "".join(lines).encode()
    total = 0
    for index in range(files):
        folder = root / f"pkg{index // 1000:02d}" / f"mod{index // 50 % 20:02d}"
        if index % 50 == 0:
            folder.mkdir(parents=True, exist_ok=True)
        start = rng.randrange(0, len(corpus) - file_bytes)
        data = f"# file {index}\n".encode() + corpus[start : start + file_bytes]
        (folder / f"file{index:05d}.py").write_bytes(data)
        total += len(data)
    (root / ".gitignore").write_text("build/\n")
    return total


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return (time.perf_counter() - started) * 1000


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--quick", action="store_true", help="5 rounds")
    ap.add_argument("--smoke", action="store_true", help="500 small files, 2 rounds")
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=11)
    args = ap.parse_args(argv)
    files = 500 if args.smoke else args.files
    file_bytes = 2_000 if args.smoke else 11_500
    rounds = 2 if args.smoke else (5 if args.quick else args.rounds)
    git = shutil.which("git")
    if git is None:
        print("git is not installed; nothing to compare", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="plan-lsp-bench-checkpoints-"))
    ws = work / "ws"
    env = {
        **os.environ, "GIT_DIR": str(work / "git"), "GIT_INDEX_FILE": str(work / "git" / "idx"),
        "GIT_WORK_TREE": str(ws), "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(work),
    }  # fmt: skip

    def git_snapshot() -> None:
        subprocess.run([git, "add", "-A"], env=env, check=True, cwd=ws)
        subprocess.run([git, "write-tree"], env=env, check=True, cwd=ws, capture_output=True)

    try:
        started = time.perf_counter()
        ws.mkdir()
        total = generate(ws, files, file_bytes)
        subprocess.run([git, "init", "-q"], env=env, check=True, cwd=ws)
        print(f"generated {files:,} files, {total / 1e6:,.0f} MB in "
              f"{time.perf_counter() - started:.1f} s; {rounds} rounds, p50")  # fmt: skip
        store = CheckpointStore(work / "store", ws)
        git_first = timed(git_snapshot)
        first = timed(lambda: store.checkpoint("first"))
        space = store.space()
        rng = random.Random(3)
        later: list[float] = []
        later_cpu: list[float] = []  # CPU time: what a busy machine adds is not in it
        git_later: list[float] = []
        reverts: list[float] = []
        redos: list[float] = []
        paths = sorted(str(p.relative_to(ws)) for p in ws.rglob("*.py"))
        for round_ in range(rounds):
            before = store.checkpoint(f"round {round_}")
            for rel in rng.sample(paths, 10):
                with open(ws / rel, "a") as handle:
                    handle.write(f"changed in round {round_}\n")
            started, cpu = time.perf_counter(), time.process_time()
            store.checkpoint("round end", kind=AFTER)
            later.append((time.perf_counter() - started) * 1000)
            later_cpu.append((time.process_time() - cpu) * 1000)
            git_later.append(timed(git_snapshot))
            started = time.perf_counter()
            store.revert(before.id)
            reverts.append((time.perf_counter() - started) * 1000)
            redos.append(timed(store.redo))
        after_space = store.space()
        checkpoint_s, tool_s, read_ahead_s = asyncio.run(do_run(ws, work))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    samples = {"later": later, "cpu": later_cpu, "git": git_later, "revert": reverts, "redo": redos}
    p50 = {k: median(v) for k, v in samples.items()}
    print_table(
        ["operation (ms)", "checkpoint store", "git add -A + write-tree", "ratio"],
        [
            ("first checkpoint", fmt(first), fmt(git_first), fmt(first / git_first)),
            ("later, 10 files changed (p50)", fmt(p50["later"]), fmt(p50["git"]),
             fmt(p50["later"] / p50["git"])),
            ("revert 10 files (p50)", fmt(p50["revert"]), "", fmt(p50["revert"] / p50["git"])),
            ("redo 10 files (p50)", fmt(p50["redo"]), "", fmt(p50["redo"] / p50["git"])),
        ],
    )  # fmt: skip
    print(f"store size after the first checkpoint: {space / 1e6:,.1f} MB "
          f"({space / total:.0%} of the tree); "
          f"after all rounds: {after_space / 1e6:,.1f} MB")  # fmt: skip
    overhead = 100 * sum(checkpoint_s) / sum(tool_s) if tool_s else float("nan")
    print(f"Do run: {len(checkpoint_s)} checkpoints in {sum(checkpoint_s):.2f} s; "
          f"{len(tool_s)} side-effect tool calls in {sum(tool_s):.2f} s; the workspace was "
          f"read ahead in {read_ahead_s:.1f} s while the plan awaited approval")  # fmt: skip
    emit_results(
        [
            Result("later checkpoint (10 files changed) p50", p50["later"], "ms", "≤ 100 ms",
                   p50["later"] <= 100),
            Result("later checkpoint (10 files changed) CPU time p50", p50["cpu"], "ms",
                   "(info)", None),
            Result("later checkpoint / git add+write-tree", p50["later"] / p50["git"], "x",
                   "≤ 1.5x", p50["later"] / p50["git"] <= 1.5),
            Result("first checkpoint / git first add", first / git_first, "x", "≤ 1.5x",
                   first / git_first <= 1.5),
            Result("revert (10 files) / git add+write-tree", p50["revert"] / p50["git"], "x",
                   "≤ 1.5x", p50["revert"] / p50["git"] <= 1.5),
            Result("Do run: checkpoints / side-effect tool time", overhead, "%", "≤ 5%",
                   overhead <= 5),
            Result("read-ahead while the plan awaits approval", read_ahead_s * 1000, "ms",
                   "(info)", None),
            Result("first checkpoint", first, "ms", "(info)", None),
            Result("store size / tree size", space / total, "x", "(info)", None),
        ]
    )  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
