"""Run every benchmark and print one summary table: metric, measured, target, met.

Run: .venv/bin/python tests/bench/run_all.py [--quick] [--smoke] [--no-peers]
     [--only NAME ...] [--markdown] [--json FILE]

--quick   shorter runs of every benchmark (still real numbers, noisier)
--smoke   tiny runs that only check each benchmark executes and reports numbers; implies
          --no-peers (no PyPI servers are installed or started)
--markdown  also print the summary as a Markdown table
--write-docs  write that table into docs/benchmarks.md, between the
          `<!-- benchmarks:begin -->` / `<!-- benchmarks:end -->` markers (the published
          numbers are always a generated run, never copied by hand); with --only, only the
          rows of the benchmarks run are replaced (the stamp says which, and when)

Each benchmark is a separate process; its output is passed through as it runs. Exit code 1
if a benchmark failed to run or reported nothing — never because a target was missed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

from _bench_util import RESULT_PREFIX, Result, fmt, print_table

HERE = Path(__file__).resolve().parent
BENCHMARKS = [
    "classify",
    "streaming",
    "partial_json",
    "responsiveness",
    "harness",
    "startup",
    "grep",
    "plan_stall",
    "compaction",
    "token_estimate",
    "prompt_cache",
    "checkpoints",
]
TIMEOUT_S = 600


def flags_for(name: str, quick: bool, smoke: bool, no_peers: bool) -> list[str]:
    if name == "classify":  # its own flags; it has no --quick
        return ["--rounds", "1" if smoke else ("5" if quick else "20")]
    flags = ["--smoke"] if smoke else (["--quick"] if quick else [])
    if name == "startup" and no_peers and not smoke:
        flags.append("--no-peers")
    return flags


_CLASSIFY_ROW = re.compile(r"^(classify \(parse \+ walk\)|ratio classify/parse)\s+([\d.]+)")


def classify_results(output: str) -> list[Result]:
    """bench_classify.py prints a table, not result lines; read its p50 column."""
    p50: dict[str, float] = {}
    for line in output.splitlines():
        match = _CLASSIFY_ROW.match(line)
        if match:
            p50[match.group(1)] = float(match.group(2))
    out: list[Result] = []
    if "ratio classify/parse" in p50:
        ratio = p50["ratio classify/parse"]
        out.append(Result("classify / parse-only (p50)", ratio, "x", "(reported)", None))
    if "classify (parse + walk)" in p50:
        micros = p50["classify (parse + walk)"]
        out.append(Result("classify per command p50", micros, "µs", "≤ 40 µs", micros <= 40))
    return out


def parse_results(output: str) -> list[Result]:
    results: list[Result] = []
    for line in output.splitlines():
        if line.startswith(RESULT_PREFIX):
            data = json.loads(line[len(RESULT_PREFIX) :])
            measured = data["measured"]
            results.append(
                Result(
                    data["metric"],
                    float("nan") if measured is None else float(measured),
                    data["unit"],
                    data["target"],
                    data["met"],
                )
            )
    return results


def run_one(name: str, flags: list[str]) -> tuple[list[Result], str | None, float]:
    command = [sys.executable, str(HERE / f"bench_{name}.py"), *flags]
    print(f"\n=== {name}: {' '.join(Path(c).name if i < 2 else c for i, c in enumerate(command))}")
    sys.stdout.flush()
    started = time.perf_counter()
    lines: list[str] = []
    try:
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, text=True, cwd=HERE.parents[1], bufsize=1
        )
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if not line.startswith(RESULT_PREFIX):
                sys.stdout.write(line)
        code = process.wait(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        return [], f"timed out after {TIMEOUT_S} s", time.perf_counter() - started
    seconds = time.perf_counter() - started
    output = "".join(lines)
    results = classify_results(output) if name == "classify" else parse_results(output)
    if code != 0:
        return results, f"exit code {code}", seconds
    if not results:
        return results, "reported no numbers", seconds
    return results, None, seconds


def markdown(rows: list[tuple[str, Result]]) -> str:
    out = ["| benchmark | metric | measured | target | met |", "|---|---|---|---|---|"]
    for name, r in rows:
        met = "—" if r.met is None else ("yes" if r.met else "**no**")
        out.append(f"| {name} | {r.metric} | {fmt(r.measured)} {r.unit} | {r.target} | {met} |")
    return "\n".join(out)


BEGIN, END = "<!-- benchmarks:begin -->", "<!-- benchmarks:end -->"
DOCS = [HERE.parent.parent / "docs" / "benchmarks.md"]


def write_docs(rows: list[tuple[str, Result]], quick: bool, only: list[str] | None) -> None:
    """Replace the generated block in docs/benchmarks.md; with `only`, just the rows of those
    benchmarks in it (the others, and their stamps, stay)."""
    import platform

    flags = " --quick" if quick else ""
    flags += f" --only {' '.join(only)}" if only else ""
    stamp = (
        f"_Generated by `tests/bench/run_all.py --write-docs{flags}` on "
        f"{time.strftime('%Y-%m-%d')}, {platform.python_implementation()} "
        f"{platform.python_version()}, {len(os.sched_getaffinity(0))} cores._"
    )
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        start, end = text.find(BEGIN), text.find(END)
        if start < 0 or end < start:
            print(f"{path}: no {BEGIN} … {END} block; not written", file=sys.stderr)
            continue
        block = f"{BEGIN}\n{stamp}\n\n{markdown(rows)}\n{END}"
        if only:
            block = merged_block(text[start + len(BEGIN) : end], rows, only, stamp)
        path.write_text(text[:start] + block + text[end + len(END) :], encoding="utf-8")
        print(f"wrote the table into {path}")


def merged_block(old: str, rows: list[tuple[str, Result]], only: list[str], stamp: str) -> str:
    """The generated block with the rows of the benchmarks in `only` replaced (where they
    were, or appended when new) and `stamp` below the stamps of the earlier runs (an earlier
    stamp of the same `--only` run is replaced)."""
    lines = old.strip("\n").splitlines()
    stamps = [line for line in lines if line.startswith("_Generated by")]
    table = [line for line in lines if line.startswith("| ")][1:]  # past the header
    fresh = markdown(rows).splitlines()[2:]
    kept: list[str] = []
    for line in table:
        if line.split(" | ")[0][2:] not in only:
            kept.append(line)
        elif fresh:
            kept += fresh
            fresh = []
    same_run = f"--only {' '.join(only)}`"
    stamps = [line for line in stamps if same_run not in line] + [stamp]
    return "\n".join([BEGIN, *stamps, "", *markdown([]).splitlines(), *kept, *fresh, END])


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description="Run all plan-lsp benchmarks")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--only", nargs="+", choices=BENCHMARKS)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--json", type=Path, help="write the summary here as JSON")
    ap.add_argument("--write-docs", action="store_true")
    args = ap.parse_args(argv)
    rows: list[tuple[str, Result]] = []
    failures: list[tuple[str, str]] = []
    timings: list[tuple[str, float]] = []
    for name in args.only or BENCHMARKS:
        flags = flags_for(name, args.quick, args.smoke, args.no_peers)
        results, failure, seconds = run_one(name, flags)
        rows += [(name, r) for r in results]
        timings.append((name, seconds))
        if failure is not None:
            failures.append((name, failure))
    print("\n=== summary" + (" (smoke: numbers are not meaningful)" if args.smoke else ""))
    print_table(
        ["benchmark", "metric", "measured", "target", "met"],
        [
            (name, r.metric, f"{fmt(r.measured)} {r.unit}".strip(), r.target,
             "-" if r.met is None else ("yes" if r.met else "NO"))
            for name, r in rows
        ],
        left=2,
    )  # fmt: skip
    print("wall time: " + ", ".join(f"{n} {s:.1f} s" for n, s in timings))
    for name, failure in failures:
        print(f"FAILED: {name}: {failure}")
    if args.markdown:
        print()
        print(markdown(rows))
    if args.write_docs and not args.smoke:
        write_docs(rows, args.quick, args.only)
    if args.json is not None:
        args.json.write_text(
            json.dumps(
                {
                    "results": [
                        {"benchmark": n, **asdict(r)}
                        | {"measured": None if r.measured != r.measured else r.measured}
                        for n, r in rows
                    ],
                    "failures": [{"benchmark": n, "error": e} for n, e in failures],
                    "seconds": dict(timings),
                },
                indent=2,
            )
        )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
