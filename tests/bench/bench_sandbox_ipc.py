"""What the host-IPC guard costs a plan-mode command under bubblewrap: wall time of `true`
in the plan profile with the Landlock layer stacked inside (as shipped) and without it (the
layer taken out of the command line), rounds interleaved in shuffled order. The seccomp
rule costs nothing measurable (a few more BPF instructions per syscall) and is in both.

Needs bubblewrap and a kernel with Landlock. Not part of run_all.py.

Run: .venv/bin/python tests/bench/bench_sandbox_ipc.py [--rounds N]
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from plan_lsp.policy.sandbox import bwrap
from plan_lsp.policy.sandbox.landlock import landlock_abi


def _once(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True, stdin=subprocess.DEVNULL)
    return (time.perf_counter() - started) * 1000


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=60)
    args = parser.parse_args()
    if bwrap.bwrap_path() is None or landlock_abi() < 1:
        print("needs bubblewrap and Landlock", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        shipped = bwrap.plan_argv(ws, ["true"])
        at = shipped.index("--filesystem-only") - 4
        without = shipped[:at] + shipped[shipped.index("--", at + 5) + 1 :]
        times: dict[str, list[float]] = {"with the Landlock layer": [], "without": []}
        for _ in range(3):  # warm the page cache
            _once(shipped)
            _once(without)
        for _ in range(args.rounds):
            order = list(times)
            random.shuffle(order)
            for name in order:
                times[name].append(_once(shipped if name.startswith("with ") else without))
    for name, values in times.items():
        values.sort()
        p90 = values[int(0.9 * (len(values) - 1))]
        print(
            f"{name:24} median {statistics.median(values):6.1f} ms   "
            f"p90 {p90:6.1f} ms   min {values[0]:6.1f} ms   ({len(values)} runs)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
