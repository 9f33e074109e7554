"""`find` has a grammar of its own: leading options, start paths, then an expression of
primaries and operators. Only the primaries its `programs.toml` entry accepts pass (no
`-exec`, `-ok`, `-delete`, `-fprint*`, `-fls`, and no `-L`/`-follow`, which follow symlinks
out of the workspace)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from plan_lsp.policy.shell.model import caps_text
from plan_lsp.policy.shell.valuecheck import check_value

if TYPE_CHECKING:
    from plan_lsp.policy.shell.database import Program
    from plan_lsp.policy.shell.lexer import SWord
    from plan_lsp.policy.shell.model import Findings
    from plan_lsp.policy.shell.paths import PathPolicy

_EXPRESSION_START = frozenset({"(", ")", "!", ","})
_OPERATORS = _EXPRESSION_START | {"-not", "-a", "-and", "-o", "-or"}


def check_find(f: Findings, policy: PathPolicy, prog: Program, args: list[SWord]) -> None:
    problem = _problem(policy, prog, args)
    if problem is not None:
        f.unproven(problem)
        return
    f.add(prog.caps, f"`find` {prog.why} ({caps_text(prog.caps)})")


def _problem(policy: PathPolicy, prog: Program, args: list[SWord]) -> str | None:
    n = len(args)
    i = 0
    for word in args:
        if word.glob and policy.glob_matches(word.pattern):
            return (
                f"`{word.text}` is an unquoted glob that matches files here, so bash would "
                "replace it with any number of words; quote it"
            )
    while i < n and args[i].value.startswith("-") and args[i].value not in prog.options:
        if args[i].value not in prog.leading:
            return f"`{args[i].text}` is not an option of `find` that the allow-list knows"
        i += 1
    starts = i
    while i < n:
        word = args[i]
        v = word.value
        if v.startswith("-") or v in _EXPRESSION_START:
            break
        problem = policy.read_problem(v)
        if problem is not None:
            return problem
        i += 1
    if i == starts:
        problem = policy.walk_problem("find")
        if problem is not None:
            return problem
    while i < n:
        v = args[i].value
        i += 1
        if v in _OPERATORS:
            continue
        option = prog.options.get(v)
        if option is None:
            return (
                f"`{v}` is not a `find` primary that the allow-list knows to be read-only "
                "(`-exec`, `-delete`, `-fprint` and the like run or write things)"
            )
        if option.arity == "none" or i >= n:
            continue
        value = args[i]
        i += 1
        if option.kind == "path":
            problem = policy.read_problem(value.value)
            if problem is not None:
                return f"`{v} {value.value}`: {problem}"
        elif option.check is not None:
            problem = check_value(option.check, value.value)
            if problem is not None:
                return f"`{v} {value.value}`: {problem}"
    return None
