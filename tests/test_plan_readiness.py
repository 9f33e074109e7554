"""Readiness diagnostics on the plan document."""

from __future__ import annotations

from plan_lsp.plan.document import MAX_PLAN_CHARS
from plan_lsp.plan.readiness import (
    CODE_EMPTY,
    CODE_MARKER,
    CODE_NO_STEPS,
    CODE_TOO_LONG,
    PlanIssue,
    check_plan,
    has_errors,
)

GOOD = "# Plan\n\n1. Read `src/app.py`\n2. Add the endpoint\n"


def codes(issues: list[PlanIssue]) -> list[str]:
    return [issue.code for issue in issues]


def test_good_plan_has_no_issues() -> None:
    assert check_plan(GOOD) == []
    assert not has_errors([])


def test_empty_and_blank_plans_are_errors() -> None:
    for text in ("", "  \n\t\n"):
        issues = check_plan(text)
        assert codes(issues) == [CODE_EMPTY]
        assert issues[0].severity == "error"
        assert has_errors(issues)


def test_markers_each_occurrence_with_position() -> None:
    text = "# Plan 😀 TODO\n1. Step TBD and FIXME\n2. Who owns this ???\n3. TODOs are words\n"
    issues = [issue for issue in check_plan(text) if issue.code == CODE_MARKER]
    spans = [(i.line, i.start_char, i.end_char) for i in issues]
    # columns are code points: "# Plan " is 7, the emoji 1, the space 1 -> TODO at 9..13
    assert spans == [(0, 9, 13), (1, 8, 11), (1, 16, 21), (2, 17, 20)]
    assert all(issue.severity == "warning" for issue in issues)
    assert "'FIXME'" in issues[2].message
    assert not has_errors(issues)


def test_markers_in_code_are_quotes() -> None:
    text = "1. Remove the `TODO` comment\n```\n# TODO: not ours\n```\n2. Fix ``a ` TODO``\n"
    assert check_plan(text) == []


def test_lowercase_todo_is_prose() -> None:
    assert check_plan("1. Update the todo list and the tbd column\n") == []


def test_no_steps_warning() -> None:
    issues = check_plan("# Plan\n\nJust prose, no list.\n")
    assert codes(issues) == [CODE_NO_STEPS]
    assert issues[0].severity == "warning"
    assert (issues[0].line, issues[0].start_char, issues[0].end_char) == (0, 0, 6)


def test_each_kind_of_step_counts() -> None:
    for step in ("- a step", "* a step", "+ a step", "1. a step", "12) a step", "- [ ] a step"):
        assert check_plan(f"# Plan\n{step}\n") == [], step


def test_steps_inside_code_do_not_count() -> None:
    assert codes(check_plan("# Plan\n```\n1. not a step\n```\n")) == [CODE_NO_STEPS]


def test_too_long_is_an_error_at_the_limit() -> None:
    line = "- " + "x" * 98 + "\n"  # 101 chars per line
    text = line * (MAX_PLAN_CHARS // len(line) + 1)
    assert len(text) > MAX_PLAN_CHARS
    issues = check_plan(text)
    assert codes(issues) == [CODE_TOO_LONG]
    issue = issues[0]
    assert issue.severity == "error"
    assert has_errors(issues)
    assert (issue.line, issue.start_char) == divmod(MAX_PLAN_CHARS, len(line))
    assert issue.end_char == 100
    assert f"{len(text):,}" in issue.message


def test_exactly_at_the_limit_is_fine() -> None:
    text = "1. " + "x" * (MAX_PLAN_CHARS - 3)
    assert len(text) == MAX_PLAN_CHARS
    assert check_plan(text) == []
