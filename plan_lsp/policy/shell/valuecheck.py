"""Checks for option values and operands that are more than plain text (named in
`programs.toml`: `checks = { "--format" = "git_pretty" }`, operand roles `sed`, `jq`, ...)."""

from __future__ import annotations

import re
from collections.abc import Callable

from plan_lsp.policy.shell.awk import check_awk
from plan_lsp.policy.shell.embedded import check_jq, check_sed

Check = Callable[[str], "str | None"]

_PRETTY_NAMES = frozenset(
    {"oneline", "short", "medium", "full", "fuller", "reference", "email", "mboxrd", "raw"}
)
# `%G?`, `%GG`, `%GS`, ...: verifying a signature runs the program `gpg.program` names, which a
# repository's own configuration can set.
_SIGNATURE = re.compile(r"%G|%\(signature")
# A character set name (`UTF-8`, `latin1//TRANSLIT`): never a path to a conversion module.
_CHARSET = r"[A-Za-z0-9][A-Za-z0-9_.:+-]*(//[A-Za-z]*)*\Z"
# yq: Python's yq hands its program to jq, mikefarah's yq has its own language with
# `load`, `env`, `eval`, ...; what both read the same way and that only selects from the
# input is a plain path expression: `.`, `.a.b`, `.a[0]`, `.a[]`, `."k"`, `.["k"]`, joined
# by `|` or `,`, and `keys`, `length`, `type`.
_YQ_SEG = r'(?:\.[A-Za-z_][A-Za-z0-9_]*|\."[^"\\$]*"|\.?\[(?:-?[0-9]+|"[^"\\$]*")?\])'
_YQ_TERM = rf"(?:(?:\.|{_YQ_SEG})(?:{_YQ_SEG}\??)*|keys|length|type)"
_YQ = rf"\s*{_YQ_TERM}\s*(?:[|,]\s*{_YQ_TERM}\s*)*\Z"


def _matching(pattern: str, problem: str) -> Check:
    """A value must match `pattern` (from its start); else `problem`."""
    regex = re.compile(pattern)
    return lambda value: None if regex.match(value) else problem


def _one_of(allowed: str, why: str) -> Check:
    return lambda value: None if value == allowed else f"only `{allowed}` is accepted: {why}"


def _datefmt(value: str) -> str | None:
    # Without the `+`, `date` reads the operand as a new date and tries to set the clock.
    return None if value.startswith("+") else "is not a `+FORMAT` (it would set the clock)"


def _date_string(value: str) -> str | None:
    # GNU date reads `TZ="NAME"` at the start of a date string and opens NAME as a time zone
    # file, whatever path it is (parse-datetime.y).
    if "tz=" in value.lower():
        return 'names a time zone (`TZ="…"`), which `date` opens as a file, whatever its path'
    return None


def _file_name(value: str) -> str | None:
    if "/" in value or value in ("", ".", ".."):
        return "is not a plain file name (a program opens it relative to each folder it walks)"
    return None


def _git_format(value: str) -> str | None:
    if _SIGNATURE.search(value):
        return "asks for signature checks, which run the program the repository configures"
    return None


def _git_pretty(value: str) -> str | None:
    if value.startswith(("format:", "tformat:")) or "%" in value:
        return _git_format(value)
    if value in _PRETTY_NAMES:
        return None
    return (
        "names a pretty format that is not built into git (it would come from the "
        "repository's configuration)"
    )


def _tar_archive(value: str) -> str | None:
    if ":" in value:
        return "names a remote archive (`HOST:FILE`), which tar reaches by running a remote shell"
    return None


# Any other value makes git run git in each submodule (`status`, `diff`, `log`), a repository
# whose configuration the gate has not checked.
_IN_SUBMODULES = "other values make git run git inside each submodule"

CHECKS: dict[str, Check] = {
    "sed": check_sed,
    "awk": check_awk,
    "jq": check_jq,
    "duration": _matching(
        r"[0-9]+(\.[0-9]+)?[smhd]?\Z", "is not a duration like `10`, `5s` or `2m`"
    ),
    "datefmt": _datefmt,
    "date_string": _date_string,
    "file_name": _file_name,
    "int": _matching(r"[0-9]+\Z", "is not a number"),
    "git_pretty": _git_pretty,
    "git_format": _git_format,
    "git_ignore_submodules": _one_of("all", _IN_SUBMODULES),
    "git_submodule_format": _one_of("short", _IN_SUBMODULES),
    "number": _matching(
        r"[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?\Z", "is not a number"
    ),
    "find_number": _matching(r"[+-]?[0-9]+[a-zA-Z]?\Z", "is not a number"),
    "charset": _matching(_CHARSET, "is not a character set name"),
    "yq": _matching(
        _YQ,
        "is not a plain path expression (`.a.b`, `.a[0]`, `.a[]`, joined by `|` or `,`, and "
        "`keys`, `length`, `type`): the yq versions differ in what other expressions read "
        "(files, the environment)",
    ),
    "tar_archive": _tar_archive,
}


def check_value(name: str, value: str) -> str | None:
    check = CHECKS.get(name)
    if check is None:
        return f"has no checker `{name}`"
    return check(value)
