"""Mirroring todo progress into the plan's checklist; paths the plan mentions."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plan_lsp.plan.checklist import is_deviation, mentioned_paths, mirror_todos

PLAN = """# Plan: health endpoint

1. Add the `/health` route in `src/app.py`
2. Write **tests** for it in tests/test_health.py
3. Update README.md

Notes:
- keep it small
```
1. Add the /health route (an example, not a step)
```
"""


def test_numbered_steps_get_boxes_with_status() -> None:
    todos = [
        ("Add /health route", "completed"),
        ("Write tests", "in_progress"),
        ("Update the README", "pending"),
    ]
    # count=1: the look-alike line inside the code fence is not a step
    assert mirror_todos(PLAN, todos) == PLAN.replace("1. Add the", "1. [x] Add the", 1).replace(
        "2. Write", "2. [~] Write"
    ).replace("3. Update", "3. [ ] Update")


def test_idempotent_and_reversible() -> None:
    todos = [("Add /health route", "completed"), ("Write tests", "in_progress")]
    once = mirror_todos(PLAN, todos)
    assert mirror_todos(once, todos) == once
    back = mirror_todos(once, [("Add /health route", "pending"), ("Write tests", "pending")])
    assert back == PLAN.replace("1. Add", "1. [ ] Add", 1).replace("2. Write", "2. [ ] Write")
    again = mirror_todos(back, [("Write tests", "completed")])
    assert "2. [x] Write **tests**" in again
    assert "1. [ ] Add" in again


def test_checkbox_lines_keep_their_style() -> None:
    plan = "# Plan\r\n- [ ] Create the parser module\r\n*  [X]  Wire the CLI\r\n- [ ] Docs"
    todos = [
        ("create parser module", "completed"),
        ("Wire the CLI", "completed"),
        ("docs", "in_progress"),
    ]
    assert mirror_todos(plan, todos) == (
        "# Plan\r\n- [x] Create the parser module\r\n*  [X]  Wire the CLI\r\n- [~] Docs"
    )


def test_plain_bullets_only_when_no_structured_steps() -> None:
    plan = "# Plan\n- Refactor the loader\n- Add caching\n"
    assert mirror_todos(plan, [("Add caching", "completed")]) == (
        "# Plan\n- Refactor the loader\n- [x] Add caching\n"
    )
    structured = "# Plan\n1. Refactor the loader\n- Add caching\n"
    assert mirror_todos(structured, [("Add caching", "completed")]) == structured


def test_each_step_takes_one_todo_and_best_match_wins() -> None:
    plan = "1. Write tests\n2. Write tests for the parser\n"
    todos = [("write tests for the parser", "completed"), ("write tests", "in_progress")]
    assert mirror_todos(plan, todos) == "1. [~] Write tests\n2. [x] Write tests for the parser\n"


def test_unrelated_todos_change_nothing() -> None:
    assert mirror_todos(PLAN, [("Deploy to production", "completed")]) == PLAN
    assert mirror_todos(PLAN, [("Add /health route", "blocked")]) == PLAN
    assert mirror_todos(PLAN, []) == PLAN


def test_step_numbers_in_todos_are_ignored() -> None:
    plan = "1. Update README.md\n"
    assert mirror_todos(plan, [("Step 1: update README.md", "completed")]) == (
        "1. [x] Update README.md\n"
    )


_STEP_TEXTS = st.lists(
    st.text(alphabet="abcdefgh ", min_size=3, max_size=20).filter(lambda t: t.strip()),
    min_size=1,
    max_size=6,
)


@settings(max_examples=150, deadline=None)
@given(
    steps=_STEP_TEXTS,
    statuses=st.lists(st.sampled_from(["pending", "in_progress", "completed"]), max_size=6),
)
def test_mirroring_is_idempotent_and_only_touches_boxes(
    steps: list[str], statuses: list[str]
) -> None:
    plan = "# Plan\n" + "".join(f"{n}. {text.strip()}\n" for n, text in enumerate(steps, 1))
    todos = [(steps[i].strip(), status) for i, status in enumerate(statuses[: len(steps)])]
    once = mirror_todos(plan, todos)
    assert mirror_todos(once, todos) == once
    for marker in ("[x] ", "[~] ", "[ ] "):
        once = once.replace(marker, "")
    assert once == plan


# -- mentioned paths and deviations -----------------------------------------------------------


def test_mentioned_paths() -> None:
    text = (
        "Edit `src/app.py` and ./src/util/io.py, then setup.cfg.\n"
        "Touch `Makefile`, the docs/ folder and `tests/*.py` (e.g. this), see "
        "https://example.com/x/y.html and C:\\proj\\win.py."
    )
    paths = mentioned_paths(text)
    for expected in (
        "src/app.py",
        "src/util/io.py",
        "setup.cfg",
        "Makefile",
        "docs/",
        "tests/*.py",
    ):
        assert expected in paths
    assert "e.g" not in paths
    assert not any("example.com" in path or path.startswith("x/") for path in paths)


@pytest.mark.parametrize(
    ("path", "deviation"),
    [
        ("src/app.py", False),
        ("./src/app.py", False),
        ("/home/u/ws/src/app.py", False),
        ("src\\app.py", False),
        ("lib/README.md", False),  # a bare file name covers it anywhere
        ("docs/guide/intro.md", False),  # a folder covers what is inside it
        ("tests/test_api.py", False),  # a glob
        ("src/other.py", True),
        ("src/app.pyc", True),
        ("setup.py", True),
        ("mydocs/x.md", True),
    ],
)
def test_is_deviation(path: str, deviation: bool) -> None:
    plan = "1. Edit `src/app.py`\n2. Update README.md and docs/\n3. Add `tests/*.py`\n"
    assert is_deviation(path, plan) is deviation


def test_everything_is_a_deviation_for_a_plan_without_paths() -> None:
    assert is_deviation("src/app.py", "1. Make it faster\n")
