"""A grounded check of what a plan names, without a model (Warning diagnostics):

- a path (a code span, or a bare word with a folder and an extension) must exist in the
  workspace, unless its line says the plan creates it (new, create, add, …);
- a symbol (a code span that is an identifier, dotted or called: `a.b`, `run()`) must occur
  in the workspace's files, unless its line says it is new;
- every numbered step has something to check it by (a test, a command, what to look at),
  or the plan has a verification section;
- every command of the verification section (its code blocks and code spans with a space)
  passes the plan-mode shell classifier.

The lookups are handed in (`Lookups`): this layer reads no files and imports no policy."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from plan_lsp.plan.document import fenced_code_mask, split_lines, strip_line_ending
from plan_lsp.plan.readiness import PlanIssue

CODE_PATH = "plan-missing-path"
CODE_SYMBOL = "plan-unknown-symbol"
CODE_UNCHECKED = "plan-step-unchecked"
CODE_COMMAND = "plan-command-refused"

_SPAN_RE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
_BARE_PATH_RE = re.compile(r"(?<![\w/.:`-])((?:[\w.-]+/)+[\w.-]+\.[A-Za-z0-9]{1,8})\b(?!`)")
_PATH_RE = re.compile(r"^\.{0,2}/?(?:[\w.-]+/)*[\w-][\w.-]*(?:\.[A-Za-z0-9]{1,8}|/)$")
_SYMBOL_RE = re.compile(r"^[A-Za-z_]\w*(?:(?:\.|::)[A-Za-z_]\w*)*(?:\(\))?$")
_NEW_RE = re.compile(
    r"\b(?:new|creates?|add(?:s|ed)?|introduce[sd]?|define[sd]?|renamed? to|generate[sd]?)\b",
    re.IGNORECASE,
)
_STEP_RE = re.compile(r"^(?P<indent>\s{0,3})\d{1,9}[.)]\s+\S")
_HEADING_RE = re.compile(r"^\s{0,3}#{1,6}\s+(?P<title>.*)$")
_VERIFY_RE = re.compile(r"verif|validat|\btest|\bcheck", re.IGNORECASE)
_CHECK_RE = re.compile(
    r"\b(?:tests?|check|verify|verified|assert|run|expect|confirm|ensure|should|pytest|lint)",
    re.IGNORECASE,
)
_EXTENSIONS = frozenset(
    "py pyi md rst txt toml json yaml yml lua ts tsx js jsx mjs rs go c h cc cpp hpp java kt rb "
    "sh cfg ini lock html css scss sql proto xml vim el".split()
)
# Words that look like identifiers but name no code.
_NOT_SYMBOLS = frozenset({"true", "false", "none", "null", "nil", "self", "this"})


@dataclass
class Lookups:
    exists: Callable[[str], bool]  # a workspace-relative path exists
    find_symbols: Callable[[set[str]], set[str]]  # the symbols found in the workspace
    command_problem: Callable[[str], str | None]  # why plan mode would refuse a command


@dataclass
class _Named:
    line: int
    start: int
    end: int
    token: str
    new: bool


def _warning(at: _Named, message: str, code: str) -> PlanIssue:
    return PlanIssue("warning", message, at.line, at.start, at.end, code)


def _is_path(token: str) -> bool:
    if "/" not in token and token.rsplit(".", 1)[-1] not in _EXTENSIONS:
        return False
    return bool(_PATH_RE.match(token)) and "://" not in token and ".." != token


def _symbol_of(token: str) -> str | None:
    if not _SYMBOL_RE.match(token) or token.lower() in _NOT_SYMBOLS or len(token) < 3:
        return None
    last = re.split(r"\.|::", token.removesuffix("()"))[-1]
    # A single lowercase word (`run`, `cache`) is prose more often than code.
    if "_" not in last and last.islower() and "(" not in token and "." not in token:
        return None
    return last


def ground_plan(text: str, look: Lookups) -> list[PlanIssue]:
    lines = [strip_line_ending(line)[0] for line in split_lines(text)]
    in_code = fenced_code_mask(split_lines(text))
    paths: list[_Named] = []
    symbols: list[_Named] = []
    commands: list[_Named] = []
    steps: list[tuple[int, str]] = []  # (line, the step's text with its continuation lines)
    verify_section = False
    has_verification = False
    for number, content in enumerate(lines):
        heading = None if in_code[number] else _HEADING_RE.match(content)
        if heading:
            verify_section = bool(_VERIFY_RE.search(heading.group("title")))
            has_verification = has_verification or verify_section
            continue
        if in_code[number]:
            if (
                verify_section
                and content.strip()
                and not content.lstrip().startswith(("```", "~~~", "#"))
            ):
                indent = len(content) - len(content.lstrip())
                commands.append(_Named(number, indent, len(content), content.strip(), False))
            continue
        new = bool(_NEW_RE.search(content))
        for match in _SPAN_RE.finditer(content):
            token = match.group(1).strip()
            named = _Named(number, match.start(1), match.end(1), token, new)
            if verify_section and " " in token:
                commands.append(named)
            elif _is_path(token):
                paths.append(named)
            elif (symbol := _symbol_of(token)) is not None:
                symbols.append(_Named(number, named.start, named.end, symbol, new))
        for match in _BARE_PATH_RE.finditer(content):
            token = match.group(1)
            if token.rsplit(".", 1)[-1] in _EXTENSIONS:
                paths.append(_Named(number, match.start(1), match.end(1), token, new))
        if _STEP_RE.match(content) and not verify_section:
            steps.append((number, content))
        elif steps and steps[-1][0] < number and content.startswith((" ", "\t")):
            steps[-1] = (steps[-1][0], steps[-1][1] + "\n" + content)

    issues = [
        _warning(
            p,
            f"`{p.token}` does not exist in the workspace; if the plan creates it, say so on "
            "this line (new, create, add)",
            CODE_PATH,
        )
        for p in paths
        if not p.new and not look.exists(p.token.strip("/"))
    ]
    wanted = {s.token for s in symbols if not s.new}
    found = look.find_symbols(wanted) if wanted else set()
    issues += [
        _warning(
            s,
            f"`{s.token}` is not found in the workspace's files; check its spelling, or say "
            "on this line that the plan adds it",
            CODE_SYMBOL,
        )
        for s in symbols
        if not s.new and s.token not in found
    ]
    if not has_verification:
        issues += [
            _warning(
                _Named(line, 0, len(lines[line]), step, False),
                "This step has nothing to check it by: name a test, a command or what to look "
                "at (or add a verification section)",
                CODE_UNCHECKED,
            )
            for line, step in steps
            if not _CHECK_RE.search(step)
        ]
    for c in commands:
        why = look.command_problem(c.token)
        if why is not None:
            message = f"`{c.token}` would not pass the plan-mode shell check: {why}"
            issues.append(_warning(c, message, CODE_COMMAND))
    return sorted(issues, key=lambda i: (i.line, i.start_char))
