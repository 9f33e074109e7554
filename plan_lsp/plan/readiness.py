"""Readiness checks on a plan: what the editor shows as diagnostics on the plan document.

- empty plan (error), over `MAX_PLAN_CHARS` characters (error);
- unresolved `TBD` / `TODO` / `FIXME` / `???` markers (warning, one per occurrence); markers
  inside code (inline code spans or fenced blocks) are quotes, not open questions;
- no steps: no numbered item, bullet item or checklist item outside code (warning).

Positions are zero-based lines and code-point columns (the server converts them to the
client's encoding). Approving a plan with errors needs the user's confirmation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from plan_lsp.plan.document import MAX_PLAN_CHARS, fenced_code_mask, split_lines, strip_line_ending
from plan_lsp.plan.streaming import offset_to_position

Severity = Literal["error", "warning"]

CODE_EMPTY = "plan-empty"
CODE_TOO_LONG = "plan-too-long"
CODE_MARKER = "plan-unresolved-marker"
CODE_NO_STEPS = "plan-no-steps"

_MARKER_RE = re.compile(r"\b(?:TBD|TODO|FIXME)\b|\?{3,}")
_CODE_SPAN_RE = re.compile(r"(?<!`)(`+)(?!`).+?(?<!`)\1(?!`)")
_STEP_RE = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+\S")


@dataclass(frozen=True)
class PlanIssue:
    severity: Severity
    message: str
    line: int
    start_char: int
    end_char: int
    code: str


def has_errors(issues: list[PlanIssue]) -> bool:
    return any(issue.severity == "error" for issue in issues)


def _marker_issues(line_no: int, content: str) -> list[PlanIssue]:
    code_spans = [match.span() for match in _CODE_SPAN_RE.finditer(content)]
    issues = []
    for match in _MARKER_RE.finditer(content):
        start, end = match.span()
        if any(span_start <= start < span_end for span_start, span_end in code_spans):
            continue
        message = f"Unresolved marker '{match.group()}': settle it before approval"
        issues.append(PlanIssue("warning", message, line_no, start, end, CODE_MARKER))
    return issues


def check_plan(text: str) -> list[PlanIssue]:
    """All readiness issues of `text`: size first, then markers in document order, then steps."""
    lines = split_lines(text)
    first_line = strip_line_ending(lines[0])[0] if lines else ""
    if not text.strip():
        return [PlanIssue("error", "The plan is empty", 0, 0, 0, CODE_EMPTY)]

    issues: list[PlanIssue] = []
    if len(text) > MAX_PLAN_CHARS:
        position = offset_to_position(text, MAX_PLAN_CHARS, "utf-32")
        line_content = strip_line_ending(lines[position.line])[0]
        message = f"The plan has {len(text):,} characters; the limit is {MAX_PLAN_CHARS:,}"
        end = max(position.character, len(line_content))
        issues.append(
            PlanIssue("error", message, position.line, position.character, end, CODE_TOO_LONG)
        )

    has_step = False
    for line_no, (line, in_code) in enumerate(zip(lines, fenced_code_mask(lines), strict=True)):
        if in_code:
            continue
        content = strip_line_ending(line)[0]
        has_step = has_step or bool(_STEP_RE.match(content))
        issues.extend(_marker_issues(line_no, content))

    if not has_step:
        message = "The plan has no steps (a numbered list, bullet list or checklist)"
        issues.append(PlanIssue("warning", message, 0, 0, len(first_line), CODE_NO_STEPS))
    return issues
