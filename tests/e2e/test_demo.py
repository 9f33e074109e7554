"""The README's main job: `plan-lsp demo` runs a whole session offline and says OK."""

from __future__ import annotations

import json
import subprocess
import sys


def test_demo_runs_plan_approve_do() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "plan_lsp", "demo"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert "BLOCKED" in out
    summary = json.loads(
        next(line for line in out.splitlines() if line.startswith("summary: "))[9:]
    )
    assert summary["planningChangedFiles"] is False
    assert {"write_file", "bash"} <= set(summary["blocked"])
    assert summary["outcome"] == "completed" and summary["mode"] == "build"
    assert summary["planEdits"] > 1  # the plan arrived as several incremental edits
    assert "+    return text.upper() if shout else text" in out
