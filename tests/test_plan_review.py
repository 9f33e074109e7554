"""Review notes written in the plan buffer (`> feedback:` lines)."""

from __future__ import annotations

from plan_lsp.plan.review import extract_feedback

PLAN = (
    "# Plan\r\n"
    "1. Add the endpoint\r\n"
    "> feedback: use the existing router,\r\n"
    "> not a new one\r\n"
    "2. Write tests\r\n"
    "  > Feedback:   also cover errors  \r\n"
    "> plain quote\r\n"
    "\r\n"
    "> a quote that is not feedback\r\n"
    "```\r\n"
    "> feedback: inside code, not a note\r\n"
    "```\r\n"
    ">feedback:tight"
)


def test_extract_collects_all_notes_in_order() -> None:
    assert extract_feedback(PLAN) == (
        "use the existing router,\nnot a new one\n\nalso cover errors\nplain quote\n\ntight"
    )


def test_no_notes() -> None:
    text = "# Plan\n> just a quote\n1. step\n"
    assert extract_feedback(text) is None


def test_empty_markers_are_not_feedback() -> None:
    text = "1. step\n> feedback:\n"
    assert extract_feedback(text) is None
