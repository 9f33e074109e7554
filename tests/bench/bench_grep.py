"""The `grep` tool (`plan_lsp.tools.fs.grep`, in-process) against raw ripgrep over a generated
20,000-file tree (made in a temporary directory and removed afterwards).

Four columns per search: raw `rg -n` (what a user would type), `rg` with exactly the flags the
tool uses (`--json --hidden --sort path -g !.git`), the same without `--sort path` (which
makes rg single-threaded), and the tool itself (which parses rg's JSON,
caps results at 200 and formats them). All run as subprocesses from the same asyncio
loop, interleaved, page cache warm; medians of the rounds.

Run: .venv/bin/python tests/bench/bench_grep.py [--quick] [--smoke] [--files N] [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _bench_util import NullEditor, NullUser, Result, emit_results, fmt, median, print_table

from plan_lsp.tools.base import ToolContext
from plan_lsp.tools.fs import grep

NEEDLE_FILES = 40
IDENTIFIERS = "request handler parser cache token schema config buffer client index".split()


def generate_tree(root: Path, files: int, seed: int = 1) -> None:
    """`files` small source files in a two-level tree; a few hold a NEEDLE_ line."""
    rng = random.Random(seed)
    needles = set(rng.sample(range(files), min(NEEDLE_FILES, files)))
    per_dir = 50
    for index in range(files):
        top, sub = divmod(index // per_dir, 20)
        directory = root / f"pkg{top:02d}" / f"mod{sub:02d}"
        if index % per_dir == 0:
            directory.mkdir(parents=True, exist_ok=True)
        lines = [f'"""Module {index}."""', "", "import os", ""]
        for n in range(8):
            name = rng.choice(IDENTIFIERS)
            lines += [
                f"def handle_{name}_{n}(value):",
                f"    # keep the {name} small and readable",
                f"    return value + {rng.randint(0, 999)}",
                "",
            ]
        if index in needles:
            lines.insert(rng.randint(4, len(lines)), f"NEEDLE_{index:05d} = True")
        suffix = ".py" if index % 4 else ".txt"
        (directory / f"file{index:05d}{suffix}").write_text("\n".join(lines) + "\n")


@dataclass(frozen=True)
class Search:
    label: str
    pattern: str
    glob: str | None = None
    ignore_case: bool = False

    def raw_argv(self, rg: str, root: Path) -> list[str]:
        argv = [rg, "-n"]
        if self.ignore_case:
            argv.append("-i")
        if self.glob:
            argv += ["-g", self.glob]
        return [*argv, "-e", self.pattern, "--", str(root)]

    def tool_flags_argv(self, rg: str, root: Path) -> list[str]:
        argv = [rg, "--json", "--hidden", "--sort", "path", "-g", "!.git"]
        if self.ignore_case:
            argv.append("-i")
        if self.glob:
            argv += ["-g", self.glob]
        return [*argv, "-e", self.pattern, "--", str(root)]

    def tool_flags_unsorted_argv(self, rg: str, root: Path) -> list[str]:
        """The tool's flags less `--sort path` (which makes rg search on one thread)."""
        argv = self.tool_flags_argv(rg, root)
        index = argv.index("--sort")
        return argv[:index] + argv[index + 2 :]

    def tool_args(self) -> dict[str, Any]:
        args: dict[str, Any] = {"pattern": self.pattern}
        if self.glob:
            args["glob"] = self.glob
        if self.ignore_case:
            args["ignore_case"] = True
        return args


SEARCHES = [
    Search("rare literal (40 hits)", r"NEEDLE_\d+"),
    Search("rare, -i, glob *.py", r"needle_\d+", glob="*.py", ignore_case=True),
    Search("common (every file; tool caps at 200)", r"def handle_"),
]


async def run_process(argv: list[str]) -> int:
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    out, _ = await process.communicate()
    return out.count(b"\n")


async def timed(action: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    await action()
    return (time.perf_counter() - started) * 1000


async def measure(root: Path, rg: str, rounds: int) -> list[tuple[Search, dict[str, float]]]:
    ctx = ToolContext(
        workspace_roots=[root],
        plans_dir=root / ".plan-lsp" / "plans",
        run_id="bench",
        editor=NullEditor(),
        user=NullUser(),
        emit=lambda kind, payload: None,
    )
    out: list[tuple[Search, dict[str, float]]] = []
    for search in SEARCHES:
        result = await grep(search.tool_args(), ctx)  # warm-up, and a correctness check
        if result.is_error:
            raise RuntimeError(f"grep tool failed: {result.content}")
        samples: dict[str, list[float]] = {"raw": [], "flags": [], "unsorted": [], "tool": []}
        actions: dict[str, Callable[[], Awaitable[Any]]] = {
            "raw": lambda s=search: run_process(s.raw_argv(rg, root)),  # type: ignore[misc]
            "flags": lambda s=search: run_process(s.tool_flags_argv(rg, root)),  # type: ignore[misc]
            "unsorted": lambda s=search: run_process(s.tool_flags_unsorted_argv(rg, root)),  # type: ignore[misc]
            "tool": lambda s=search: grep(s.tool_args(), ctx),  # type: ignore[misc]
        }
        for _ in range(rounds):
            for name, action in actions.items():
                samples[name].append(await timed(action))
        row = {name: median(values) for name, values in samples.items()}
        row["matches"] = float((result.data or {}).get("count", 0))
        out.append((search, row))
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--quick", action="store_true", help="3 rounds")
    ap.add_argument("--smoke", action="store_true", help="500 files, 1 round")
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args(argv)
    files = 500 if args.smoke else args.files
    rounds = 1 if args.smoke else (3 if args.quick else args.rounds)
    rg = shutil.which("rg")
    if rg is None:
        print("ripgrep (rg) is not installed; nothing to compare", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="plan-lsp-bench-grep-"))
    try:
        started = time.perf_counter()
        generate_tree(work / "tree", files)
        print(f"generated {files:,} files in {time.perf_counter() - started:.1f} s; "
              f"{rounds} round(s), medians")  # fmt: skip
        rows = asyncio.run(measure(work / "tree", rg, rounds))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print_table(
        ["search (ms)", "raw rg -n", "rg, tool's flags", "same, no --sort", "grep tool",
         "tool / raw", "tool matches"],
        [
            (s.label, fmt(r["raw"]), fmt(r["flags"]), fmt(r["unsorted"]), fmt(r["tool"]),
             fmt(r["tool"] / r["raw"]), fmt(r["matches"], 0))
            for s, r in rows
        ],
    )  # fmt: skip
    rare = rows[0][1]
    worst = max(r["tool"] / r["raw"] for _s, r in rows)
    emit_results(
        [
            Result("grep tool / raw rg (rare pattern)", rare["tool"] / rare["raw"], "x",
                   "≤ 1.3x", rare["tool"] / rare["raw"] <= 1.3),
            Result("grep tool / raw rg (worst of 3 searches)", worst, "x", "≤ 1.3x",
                   worst <= 1.3),
            Result("raw rg, rare pattern", rare["raw"], "ms", "(info)", None),
        ]
    )  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
