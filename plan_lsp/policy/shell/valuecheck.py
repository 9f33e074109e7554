"""Checks for option values and operands that are more than plain text (named in
`programs.toml`: `checks = { "--format" = "git_pretty" }`, operand roles `sed`, `jq`, ...)."""

from __future__ import annotations

import re
from collections.abc import Callable

from plan_lsp.policy.shell.awk import check_awk
from plan_lsp.policy.shell.embedded import check_jq, check_sed

_DURATION = re.compile(r"[0-9]+(\.[0-9]+)?[smhd]?\Z")
_INT = re.compile(r"[0-9]+\Z")
_PRETTY_NAMES = frozenset(
    {"oneline", "short", "medium", "full", "fuller", "reference", "email", "mboxrd", "raw"}
)
# `%G?`, `%GG`, `%GS`, ...: verifying a signature runs the program `gpg.program` names, which a
# repository's own configuration can set.
_SIGNATURE = re.compile(r"%G|%\(signature")


def _duration(value: str) -> str | None:
    return None if _DURATION.match(value) else "is not a duration like `10`, `5s` or `2m`"


def _datefmt(value: str) -> str | None:
    # Without the `+`, `date` reads the operand as a new date and tries to set the clock.
    return None if value.startswith("+") else "is not a `+FORMAT` (it would set the clock)"


def _int(value: str) -> str | None:
    return None if _INT.match(value) else "is not a number"


def _git_format(value: str) -> str | None:
    if _SIGNATURE.search(value):
        return "asks for signature checks, which run the program the repository configures"
    return None


def _git_pretty(value: str) -> str | None:
    for prefix in ("format:", "tformat:"):
        if value.startswith(prefix):
            return _git_format(value)
    if value in _PRETTY_NAMES:
        return None
    if "%" in value:
        return _git_format(value)
    return (
        "names a pretty format that is not built into git (it would come from the "
        "repository's configuration)"
    )


_NUMBER = re.compile(r"[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?\Z")
# A character set name (`UTF-8`, `latin1//TRANSLIT`): never a path to a conversion module.
_CHARSET = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:+-]*(//[A-Za-z]*)*\Z")
# yq: Python's yq hands its program to jq, mikefarah's yq has its own language with
# `load`, `env`, `eval`, ...; what both read the same way and that only selects from the
# input is a plain path expression: `.`, `.a.b`, `.a[0]`, `.a[]`, `."k"`, `.["k"]`, joined
# by `|` or `,`, and `keys`, `length`, `type`.
_YQ_SEG = r'(?:\.[A-Za-z_][A-Za-z0-9_]*|\."[^"\\$]*"|\.?\[(?:-?[0-9]+|"[^"\\$]*")?\])'
_YQ_TERM = rf"(?:(?:\.|{_YQ_SEG})(?:{_YQ_SEG}\??)*|keys|length|type)"
_YQ = re.compile(rf"\s*{_YQ_TERM}\s*(?:[|,]\s*{_YQ_TERM}\s*)*\Z")


_FIND_NUMBER = re.compile(r"[+-]?[0-9]+[a-zA-Z]?\Z")


def _find_number(value: str) -> str | None:
    return None if _FIND_NUMBER.match(value) else "is not a number"


def _number(value: str) -> str | None:
    return None if _NUMBER.match(value) else "is not a number"


def _charset(value: str) -> str | None:
    return None if _CHARSET.match(value) else "is not a character set name"


def _yq(value: str) -> str | None:
    if _YQ.match(value):
        return None
    return (
        "is not a plain path expression (`.a.b`, `.a[0]`, `.a[]`, joined by `|` or `,`, and "
        "`keys`, `length`, `type`): the yq versions differ in what other expressions read "
        "(files, the environment)"
    )


def _tar_archive(value: str) -> str | None:
    if ":" in value:
        return "names a remote archive (`HOST:FILE`), which tar reaches by running a remote shell"
    return None


def _one_of(allowed: str, why: str) -> Callable[[str], str | None]:
    def check(value: str) -> str | None:
        return None if value == allowed else f"only `{allowed}` is accepted: {why}"

    return check


# Any other value makes git run git in each submodule (`status`, `diff`, `log`), a repository
# whose configuration the gate has not checked.
_IN_SUBMODULES = "other values make git run git inside each submodule"

CHECKS: dict[str, Callable[[str], str | None]] = {
    "sed": check_sed,
    "awk": check_awk,
    "jq": check_jq,
    "duration": _duration,
    "datefmt": _datefmt,
    "int": _int,
    "git_pretty": _git_pretty,
    "git_format": _git_format,
    "git_ignore_submodules": _one_of("all", _IN_SUBMODULES),
    "git_submodule_format": _one_of("short", _IN_SUBMODULES),
    "number": _number,
    "find_number": _find_number,
    "charset": _charset,
    "yq": _yq,
    "tar_archive": _tar_archive,
}


def check_value(name: str, value: str) -> str | None:
    check = CHECKS.get(name)
    if check is None:
        return f"has no checker `{name}`"
    return check(value)
