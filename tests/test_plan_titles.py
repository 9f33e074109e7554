"""A plan's title in the plans list (`session.plans.plan_title`): the model writes the plan
and the repository may ship the file, so the title is one short line of visible characters,
read only from a regular file of the plans directory, never through a link."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plan_lsp.session.plans import TITLE_MAX_CHARS, clean_title, plan_head, plan_title

TABLE = [
    ("# Plan one\n", "PLAN.md", "Plan one"),
    ("intro\n\n## Second level\n", "PLAN.md", "Second level"),
    ("no heading\n", "PLAN-2.md", "PLAN-2.md"),
    (None, "PLAN.md", "PLAN.md"),
    ("#\n# Real\n", "PLAN.md", "Real"),
    ("# Safe\u202e dm.exe\n", "PLAN.md", "Safe dm.exe"),
    ("# a\x1b[2Jb\x07c\n", "PLAN.md", "a [2Jb c"),
    ("# one\u2028two\n", "PLAN.md", "one"),
    ("# zero\u200bwidth\u2066x\u2069\n", "PLAN.md", "zero width x"),
    ("# tab\there   and  spaces\n", "PLAN.md", "tab here and spaces"),
    ("# " + "x" * 500 + "\n", "PLAN.md", "x" * TITLE_MAX_CHARS),
    ("# \u202e\u200b\n", "PLAN.md", "PLAN.md"),
    ("\n" * 60 + "# too late\n", "PLAN.md", "PLAN.md"),
    ("# priv\ue000ate\n", "PLAN.md", "priv ate"),
]


@pytest.mark.parametrize(("text", "name", "expected"), TABLE)
def test_plan_title_table(text: str | None, name: str, expected: str) -> None:
    assert plan_title(text, name) == expected


SHOWN = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}


@given(st.text(), st.text(min_size=1))
def test_a_title_is_one_short_line_of_visible_characters(text: str, name: str) -> None:
    title = plan_title(text, name)
    assert 0 < len(title) <= TITLE_MAX_CHARS
    assert not {unicodedata.category(c) for c in title} & SHOWN
    assert title == title.strip() and "  " not in title
    assert clean_title(title) == title  # cleaning is idempotent


def _plans(tmp_path: Path) -> Path:
    plans = tmp_path / "ws" / ".plan-lsp" / "plans"
    plans.mkdir(parents=True)
    return plans


def test_the_head_is_read_from_regular_files_of_the_plans_directory_only(tmp_path: Path) -> None:
    plans = _plans(tmp_path)
    ws = plans.parent.parent
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.md").write_text("# secret\n")
    (plans / "PLAN.md").write_text("# mine\n")
    (plans / "linked").symlink_to(outside, target_is_directory=True)
    (plans / "leaf.md").symlink_to(outside / "x.md")
    os.mkfifo(plans / "fifo.md")
    (plans / "big.md").write_bytes(b"# big\n" + b"y" * (1 << 20))
    assert plan_head(plans, ws, plans / "PLAN.md") == "# mine\n"
    assert plan_head(plans, ws, plans / "linked" / "x.md") is None
    assert plan_head(plans, ws, plans / "leaf.md") is None
    assert plan_head(plans, ws, plans / "fifo.md") is None  # not blocked on
    assert plan_head(plans, ws, plans / "missing.md") is None
    assert plan_head(plans, ws, outside / "x.md") is None
    assert plan_head(plans, ws, ws / "hello.md") is None
    head = plan_head(plans, ws, plans / "big.md")
    assert head is not None and head.startswith("# big\n") and len(head) == 64 * 1024
