"""`find` has a grammar of its own: leading options, start paths, then an expression of
primaries and operators. Only the primaries listed in `programs.toml` pass (no `-exec`,
`-ok`, `-delete`, `-fprint*`, `-fls`, and no `-L`/`-follow`, which follow symlinks out of
the workspace)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from plan_lsp.policy.shell.model import caps_text

if TYPE_CHECKING:
    from plan_lsp.policy.shell.database import FindData
    from plan_lsp.policy.shell.lexer import SWord
    from plan_lsp.policy.shell.model import Findings
    from plan_lsp.policy.shell.paths import PathPolicy

_NUMBER = re.compile(r"[+-]?[0-9]+[a-zA-Z]?\Z")
_EXPRESSION_START = frozenset({"(", ")", "!", ","})


def check_find(f: Findings, policy: PathPolicy, data: FindData, args: list[SWord]) -> None:
    problem = _problem(policy, data, args)
    if problem is not None:
        f.unproven(problem)
        return
    caps = frozenset(data.caps)
    f.add(caps, f"`find` {data.why} ({caps_text(caps)})")


def _problem(policy: PathPolicy, data: FindData, args: list[SWord]) -> str | None:
    n = len(args)
    i = 0
    for word in args:
        if word.glob and policy.glob_matches(word.pattern):
            return (
                f"`{word.text}` is an unquoted glob that matches files here, so bash would "
                "replace it with any number of words; quote it"
            )
    while i < n and args[i].value.startswith("-") and args[i].value not in data.primaries:
        if args[i].value not in data.leading:
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
        if v in data.operators:
            continue
        kind = data.primaries.get(v)
        if kind is None:
            return (
                f"`{v}` is not a `find` primary that the allow-list knows to be read-only "
                "(`-exec`, `-delete`, `-fprint` and the like run or write things)"
            )
        if kind == "none" or i >= n:
            continue
        value = args[i]
        i += 1
        if kind == "path":
            problem = policy.read_problem(value.value)
            if problem is not None:
                return f"`{v} {value.value}`: {problem}"
        elif kind == "number" and not _NUMBER.match(value.value):
            return f"`{v} {value.value}`: not a number"
    return None
