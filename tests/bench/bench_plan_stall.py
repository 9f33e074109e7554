"""The longest stall of the visible plan while a model streams it, per editor.

Each editor's end-to-end test streams a plan and its revision at a model's pace (~1 KB/s in
uneven pieces, with pauses longer than any debounce: `tests/e2e/model_speed.py`) and records
the PLAN.md buffer on every change. The stall is the longest time any character the model had
already streamed waited before the user could see it in the buffer — the model's own pauses
do not count, only the editor or the server holding back what had arrived. Target: ≤ 1 s.

Run: .venv/bin/python tests/bench/bench_plan_stall.py [--quick] [--smoke] [--only NAME ...]

The editors' tests run one at a time (they are the measurement, not a pass/fail here: a test
that fails still reports what it saw); `--smoke` runs only the scripted-client reference.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _bench_util import REPO, Result, emit_results, fmt, print_table

TARGET_S = 1.0
# editor -> pytest arguments selecting the tests that stream into it at model speed
EDITORS: dict[str, list[str]] = {
    "reference (scripted client, Neovim line model)": [
        "tests/e2e/test_line_models.py::test_a_plan_and_its_revision_stream_into_an_empty_plan_file"
        "[neovim-lines]"
    ],
    "VS Code (code-server)": ["tests/e2e/test_vscode.py"],
    "Neovim 0.11 (native setup)": [
        "tests/e2e/test_neovim.py::test_native_configuration_at_model_speed"
    ],
    "Neovim 0.7 and 0.11 (client-nvim)": [
        "tests/e2e/test_neovim.py::test_plan_session_with_the_plugin"
    ],
    "Vim + coc.nvim": ["tests/e2e/test_vim_coc.py::test_vim_coc_plan_session"],
    "Emacs eglot": ["tests/e2e/test_emacs.py::test_emacs_plan_session", "-k", "eglot"],
    "Emacs lsp-mode": ["tests/e2e/test_emacs.py::test_emacs_plan_session", "-k", "lsp"],
}
SMOKE = ["reference (scripted client, Neovim line model)"]


def run_editor(tests: list[str], report: Path) -> tuple[int, str]:
    env = {**os.environ, "PLAN_LSP_STALL_REPORT": str(report)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    tail = (done.stdout + done.stderr).strip().splitlines()[-1:] or [""]
    return done.returncode, tail[0]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="(same as a full run: one pass each)")
    ap.add_argument("--smoke", action="store_true", help="the scripted-client reference only")
    ap.add_argument("--only", nargs="+", choices=sorted(EDITORS))
    args = ap.parse_args(argv)
    names = args.only or (SMOKE if args.smoke else list(EDITORS))
    rows: list[tuple[str, str, str, str, str, str]] = []
    worst: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name in names:
            report = Path(scratch) / f"{len(rows)}.jsonl"
            code, tail = run_editor(EDITORS[name], report)
            lines: list[dict[str, Any]] = []
            if report.exists():
                lines = [json.loads(line) for line in report.read_text().splitlines()]
            if not lines:
                rows.append((name, "n/a", "n/a", "n/a", f"no report ({tail})", "-"))
                continue
            stall = max(line["longest_stall_s"] for line in lines)
            worst[name] = stall
            states = min(min(line["growing_states"].values() or [0]) for line in lines)
            never = max(max(line["never_shown"].values() or [0]) for line in lines)
            status = "passed" if code == 0 else f"test failed ({tail})"
            met = "yes" if stall <= TARGET_S else "NO"
            rows.append((name, f"{stall:.2f}", str(states), str(never), status, met))
    print_table(
        ["editor", "longest stall s", "fewest growing states", "chars never shown", "test",
         "≤ 1 s"],
        rows,
        left=1,
    )  # fmt: skip
    emit_results(
        [
            Result(f"plan stall: {name}", stall, "s", f"≤ {fmt(TARGET_S)} s", stall <= TARGET_S)
            for name, stall in worst.items()
        ]
    )
    return 0 if worst else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
