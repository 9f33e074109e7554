"""Shared helpers for the benchmarks: statistics, tables, and the result lines that
`run_all.py` collects.

Every benchmark prints a human table and then one `BENCH-RESULT {json}` line per headline
metric: `{"metric", "measured", "unit", "target", "met"}` (`met` is null when the metric is
informational). `run_all.py` reads only those lines.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from plan_lsp.policy.ports import FileEdit, PermissionRequest
from plan_lsp.protocol.state import PermissionAnswer, Question

REPO = Path(__file__).resolve().parents[2]
RESULT_PREFIX = "BENCH-RESULT "


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100); NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100.0 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else math.nan


def fmt(value: float, digits: int = 2) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "n/a"
    if isinstance(value, int) or (float(value).is_integer() and abs(value) >= 100):
        return f"{int(value):,}"
    return f"{value:,.{digits}f}"


def print_table(headers: Sequence[str], rows: Sequence[Sequence[object]], left: int = 1) -> None:
    """A plain fixed-width table; the first `left` columns left-aligned, the others right."""
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def line(row: Sequence[str]) -> str:
        return "  ".join(
            cell.ljust(width) if i < left else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ).rstrip()

    print(line(cells[0]))
    print("  ".join("-" * w for w in widths))
    for row in cells[1:]:
        print(line(row))
    sys.stdout.flush()


@dataclass(frozen=True)
class Result:
    metric: str
    measured: float
    unit: str
    target: str
    met: bool | None

    def emit(self) -> None:
        payload = {
            "metric": self.metric,
            "measured": None if math.isnan(self.measured) else self.measured,
            "unit": self.unit,
            "target": self.target,
            "met": self.met,
        }
        print(RESULT_PREFIX + json.dumps(payload), flush=True)


def emit_results(results: Sequence[Result]) -> None:
    print()
    print_table(
        ["metric", "measured", "target", "met"],
        [
            (
                r.metric,
                f"{fmt(r.measured)} {r.unit}".strip(),
                r.target,
                "-" if r.met is None else ("yes" if r.met else "NO"),
            )
            for r in results
        ],
    )
    for r in results:
        r.emit()


# Editor and user ports for running tools in-process: nothing open, every prompt declined.
class NullEditor:
    def open_document_text(self, path: Path) -> str | None:
        return None

    async def apply_to_open_document(self, edit: FileEdit) -> bool:
        return False


class NullUser:
    async def request_permission(self, request: PermissionRequest) -> PermissionAnswer:
        return "reject_once"

    async def ask_questions(
        self, run_id: str, questions: list[Question]
    ) -> dict[str, list[str]] | None:
        return None
