"""The benchmarks run and report numbers (`run_all.py --quick --smoke`): tiny sizes, no peer
servers from PyPI, nothing asserted about speed."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

from tests.needs import need_program

RUN_ALL = Path(__file__).resolve().parent / "run_all.py"
EXPECTED = {"classify", "streaming", "responsiveness", "harness", "startup", "grep", "plan_stall"}


def test_every_benchmark_runs_and_reports_numbers(tmp_path: Path) -> None:
    need_program("rg", "the grep benchmark compares against raw ripgrep")
    summary = tmp_path / "summary.json"
    done = subprocess.run(
        [sys.executable, str(RUN_ALL), "--quick", "--smoke", "--json", str(summary)],
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    data = json.loads(summary.read_text())
    assert data["failures"] == []
    results = data["results"]
    assert {r["benchmark"] for r in results} == EXPECTED
    for r in results:
        assert isinstance(r["measured"], float) and math.isfinite(r["measured"]), r
    by_metric = {r["metric"]: r for r in results}
    # the streamed plan arrived intact, and the summary table was printed
    assert by_metric["streaming: client got the exact plan"]["met"] is True
    assert "=== summary" in done.stdout
