"""The README's main job: `plan-lsp demo` runs a whole session offline and says OK; the
transcript the README shows is what it prints."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def demo_output() -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "plan_lsp", "demo"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def test_demo_runs_plan_approve_do(demo_output: str) -> None:
    out = demo_output
    assert "BLOCKED" in out
    summary = json.loads(
        next(line for line in out.splitlines() if line.startswith("summary: "))[9:]
    )
    assert summary["planningChangedFiles"] is False
    assert {"write_file", "bash"} <= set(summary["blocked"])
    assert summary["outcome"] == "completed" and summary["mode"] == "plan"
    assert summary["planEdits"] > 1  # the plan arrived as several incremental edits
    assert "+    return text.upper() if shout else text" in out


README = Path(__file__).resolve().parents[2] / "README.md"
TRANSCRIPT_MARK = "<!-- demo transcript:"


def readme_transcript() -> list[str]:
    """The README's demo transcript: the lines it shows, `…` marking what it leaves out."""
    text = README.read_text(encoding="utf-8").split(TRANSCRIPT_MARK, 1)[1]
    block = re.search(r"```text\n(.*?)```", text, re.S)
    assert block is not None, "README.md shows no demo transcript"
    return block.group(1).splitlines()


def test_readme_transcript_is_the_demos_output(demo_output: str) -> None:
    """Every line the README shows is a line `plan-lsp demo` prints, in the same order."""
    printed = iter(line.rstrip() for line in demo_output.splitlines())
    shown = [line.rstrip() for line in readme_transcript() if line != "…"]
    assert len(shown) > 10
    for line in shown:
        assert any(line == out for out in printed), f"the demo did not print, in order: {line!r}"
