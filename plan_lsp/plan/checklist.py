"""The plan as a checklist during the Do run, and which files it covers.

Mirroring `todo_write` progress into the plan (`mirror_todos`):

- Steps are checklist items (`- [ ] …`, `* [x] …`) and numbered items (`1. …`, `2) [x] …`)
  outside fenced code. Only when the plan has neither do plain bullets (`- …`) count.
- A todo matches the step whose normalised text is most alike (`_score`); pairs are taken
  best score first (ties: earlier todo, then earlier step), each step takes at most one.
- A matched step's box shows its todo's status: `completed` → `[x]`, `in_progress` →
  `[~]`, `pending` → `[ ]`. A step without a box gets one (`1. [x] …`). Unmatched steps and
  all other text are left as they are, byte for byte. Applying the same todos twice gives
  the same text, and a todo going back to `pending` clears its mark again.

Deviations (`is_deviation`): a path counts as mentioned when some path named in the plan
(`mentioned_paths`) is a run of its whole path components — `app.py`, `src/app.py` and
`src/` all cover `src/app.py` — or a glob (`tests/*.py`) matching it.
"""

from __future__ import annotations

import difflib
import fnmatch
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from plan_lsp.plan.document import fenced_code_mask, split_lines, strip_line_ending

STATUS_MARKS = {"completed": "x", "in_progress": "~", "pending": " "}
MIN_SCORE = 0.6

_STEP_RE = re.compile(
    r"^(?P<lead>\s*(?:(?P<bullet>[-*+])|\d{1,9}[.)])\s+)"
    r"(?P<box>\[(?P<mark>[ xX~])\](?P<gap>\s+))?"
    r"(?P<text>\S.*)$"
)
_EMPHASIS_RE = re.compile(r"[`*_~]")
_STEP_NUMBER_RE = re.compile(r"^\s*(?:step\s*)?\d+\s*[.):-]?\s+")
_NON_WORD_RE = re.compile(r"[^\w/.-]+")


@dataclass(frozen=True)
class _Step:
    index: int  # line index
    kind: str  # "checkbox" | "numbered" | "bullet"
    match: re.Match[str]
    normalised: str


def _normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    text = _EMPHASIS_RE.sub("", text)
    text = _STEP_NUMBER_RE.sub("", text)
    words = (word.strip(".-") for word in _NON_WORD_RE.sub(" ", text).split())
    return " ".join(word for word in words if word)


def _score(todo: str, step: str) -> float:
    if not todo or not step:
        return 0.0
    if todo == step:
        return 3.0
    short, long = sorted((todo, step), key=len)
    if len(short) >= 4 and f" {short} " in f" {long} ":
        return 2.0 + len(short) / len(long)
    short_words, long_words = set(short.split()), set(long.split())
    if len(short_words) >= 2:
        coverage = len(short_words & long_words) / len(short_words)
        if coverage >= 0.75:
            return 1.0 + coverage * len(short_words & long_words) / len(short_words | long_words)
    ratio = difflib.SequenceMatcher(None, todo, step, autojunk=False).ratio()
    return ratio if ratio >= MIN_SCORE else 0.0


def _steps(lines: list[str]) -> list[_Step]:
    found: list[_Step] = []
    for index, (line, in_code) in enumerate(zip(lines, fenced_code_mask(lines), strict=True)):
        if in_code:
            continue
        match = _STEP_RE.match(strip_line_ending(line)[0])
        if match is None:
            continue
        if match.group("bullet") is None:
            kind = "numbered"
        else:
            kind = "checkbox" if match.group("box") else "bullet"
        found.append(_Step(index, kind, match, _normalise(match.group("text"))))
    structured = [step for step in found if step.kind != "bullet"]
    return structured or found


def _pairs(todos: Sequence[tuple[str, str]], steps: list[_Step]) -> dict[int, int]:
    """Step position in `steps` → the todo matched to it."""
    pairs = []
    for todo_no, (content, _) in enumerate(todos):
        normalised = _normalise(content)
        for step_no, step in enumerate(steps):
            score = _score(normalised, step.normalised)
            if score >= MIN_SCORE:
                pairs.append((-score, todo_no, step_no))
    pairs.sort()
    used_todos: set[int] = set()
    assigned: dict[int, int] = {}
    for _, todo_no, step_no in pairs:
        if todo_no in used_todos or step_no in assigned:
            continue
        used_todos.add(todo_no)
        assigned[step_no] = todo_no
    return assigned


def plan_steps(plan_text: str) -> list[str]:
    """The texts of the plan's steps (as `mirror_todos` finds them), in order."""
    return [step.match.group("text") for step in _steps(split_lines(plan_text))]


def step_lines(plan_text: str) -> list[int]:
    """The line (0-based) of each of the plan's steps, in order."""
    return [step.index for step in _steps(split_lines(plan_text))]


def todo_steps(plan_text: str, todos: Sequence[tuple[str, str]]) -> dict[int, int]:
    """Todo position → the 1-based number of the plan step it is matched to."""
    pairs = _pairs(todos, _steps(split_lines(plan_text)))
    return {todo_no: step_no + 1 for step_no, todo_no in pairs.items()}


def _with_mark(match: re.Match[str], mark: str, ending: str) -> str:
    old_mark = match.group("mark")
    if old_mark is not None and (old_mark == mark or (mark == "x" and old_mark == "X")):
        return match.string + ending
    gap = match.group("gap") or " "
    return f"{match.group('lead')}[{mark}]{gap}{match.group('text')}{ending}"


def mirror_todos(plan_text: str, todos: Sequence[tuple[str, str]]) -> str:
    """The plan with each matched step's checkbox showing its todo's status."""
    lines = split_lines(plan_text)
    steps = _steps(lines)
    for step_no, todo_no in _pairs(todos, steps).items():
        mark = STATUS_MARKS.get(todos[todo_no][1])
        if mark is None:  # an unknown status says nothing about progress
            continue
        step = steps[step_no]
        ending = strip_line_ending(lines[step.index])[1]
        lines[step.index] = _with_mark(step.match, mark, ending)
    return "".join(lines)


# -- paths the plan mentions -----------------------------------------------------------------

_BACKTICK_RE = re.compile(r"`([^`\n]+)`")
_BARE_PATH_RE = re.compile(r"(?<![\w/.:@\\-])(?:\.{1,2}/)*\.?\w[\w.-]*(?:/\.?[\w.-]+)*/?")
_EXTENSION_RE = re.compile(r"[^/.]\.[A-Za-z][A-Za-z0-9]{0,9}$")
_NOT_PATHS = frozenset({"e.g", "i.e", "etc", "vs", "a.k.a"})


def _normalise_path(path: str) -> str:
    path = path.strip().replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path.rstrip(".:,;")


def _looks_like_path(token: str) -> bool:
    if token.casefold() in _NOT_PATHS or not any(char.isalpha() for char in token):
        return False
    return "/" in token.strip("/") or token.endswith("/") or bool(_EXTENSION_RE.search(token))


def mentioned_paths(plan_text: str) -> set[str]:
    """File and folder paths the plan names: bare (`src/app.py`, `docs/`, `setup.cfg`) or
    any single word in backticks (`Makefile`, `tests/*.py`). Normalised: `/` separators,
    no leading `./`, no trailing sentence punctuation."""
    found: set[str] = set()
    for match in _BARE_PATH_RE.finditer(plan_text):
        token = _normalise_path(match.group())
        if _looks_like_path(token):
            found.add(token)
    for match in _BACKTICK_RE.finditer(plan_text):
        token = _normalise_path(match.group(1))
        if token and not any(char.isspace() for char in token):
            found.add(token)
    return found


def _covers(mention: str, path: str) -> bool:
    if any(char in mention for char in "*?["):
        return fnmatch.fnmatchcase(path, mention) or fnmatch.fnmatchcase(path, "*/" + mention)
    core = mention.strip("/")
    return bool(core) and f"/{core}/" in f"/{path}/"


def is_deviation(path: str, plan_text: str) -> bool:
    """True if `path` (a file the Do run touched) is not covered by any path in the plan."""
    normalised = _normalise_path(path)
    return not any(_covers(mention, normalised) for mention in mentioned_paths(plan_text))


_CHECK_MARK = re.compile(r"^(\s*(?:[-*+]|\d+[.)])\s+)\[[ xX~]\]\s?", re.MULTILINE)


def without_checklist_marks(text: str) -> str:
    """`text` with every checklist box removed: ticking boxes does not change a plan."""
    return _CHECK_MARK.sub(r"\1", text)
