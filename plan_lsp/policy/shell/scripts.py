"""`sandboxed`: what an awk or sed program shows of an intent to write files or run
commands. What this scanner does not follow is only noted (no capabilities): the sandbox
holds it. (The `classified` allow-list uses the grammars in `embedded.py` and `awk.py`.)
"""

from __future__ import annotations

import re

Problem = tuple[frozenset[str], str]

_EXEC = frozenset({"execute:subprocess"})
_WRITE_EXEC = frozenset({"write:filesystem", "execute:subprocess"})
_UNKNOWN: frozenset[str] = frozenset()
_WRITE = frozenset({"write:filesystem"})


def check_script(kind: str, script: str) -> Problem | None:
    return _check_awk(script) if kind == "awk" else _check_sed(script)


# awk --------------------------------------------------------------------------------
# After these characters awk expects an operand, so `/` starts a regular expression.
_REGEX_AFTER = frozenset("(,~!{};&|=\n")
_AWK_DENIED_WORDS = re.compile(r"\bsystem\b|@|\|")
_PRINT = re.compile(r"\bprintf?\b")


def _check_awk(script: str) -> Problem | None:
    code = _strip_awk_literals(script)
    if code is None:
        return _UNKNOWN, "has a string or regular expression this checker cannot follow"
    found = _AWK_DENIED_WORDS.search(code.replace("||", "  "))
    if found:
        return _WRITE_EXEC, f"uses `{found.group(0)}`, which can run commands or write files"
    if any(_redirects(code, match.end()) for match in _PRINT.finditer(code)):
        return _WRITE, "sends `print` output to a file"
    return None


def _strip_awk_literals(script: str) -> str | None:
    """The program with string and regex literals blanked out, or None if unterminated."""
    out: list[str] = []
    i = 0
    last = ""
    while i < len(script):
        c = script[i]
        if c == "#":
            end = script.find("\n", i)
            i = len(script) if end < 0 else end
            continue
        if c == '"' or (c == "/" and (last == "" or last in _REGEX_AFTER)):
            j = i + 1
            while j < len(script) and script[j] != c:
                if script[j] == "\n":
                    return None
                j += 2 if script[j] == "\\" else 1
            if j >= len(script):
                return None
            out.append('""')
            last = '"'
            i = j + 1
            continue
        out.append(c)
        if not c.isspace():
            last = c
        elif c == "\n":
            last = "\n"
        i += 1
    return "".join(out)


def _redirects(code: str, start: int) -> bool:
    """Whether the print statement starting at `start` has a top-level `>`."""
    depth = 0
    for c in code[start:]:
        if c in "({[":
            depth += 1
        elif c in ")}]":
            if depth == 0:
                return False
            depth -= 1
        elif c in ";\n" and depth == 0:
            return False
        elif c == ">" and depth == 0:
            return True
    return False


# sed --------------------------------------------------------------------------------
# An address, or a range of two (`1,5`, `/a/,+2`).
_ADDRESS = re.compile(
    r"\s*(?:\d+(?:~\d+)?|\$|/(?:\\.|[^/\\\n])*/I?)"
    r"(?:,\s*(?:[+~]?\d+|\$|/(?:\\.|[^/\\\n])*/I?))?"
)
_SIMPLE_COMMANDS = frozenset("pdDnNPhHgGxlzF=qQ{}")
_TEXT_COMMANDS = frozenset("aic")
_READ_COMMANDS = frozenset("rR")
_LABEL_COMMANDS = frozenset(":btT")
_S_FLAGS = frozenset("gpiImM0123456789")


def _check_sed(script: str) -> Problem | None:
    i, n = 0, len(script)
    while i < n:
        c = script[i]
        if c in " \t\n;":
            i += 1
            continue
        if c == "#":
            end = script.find("\n", i)
            i = n if end < 0 else end
            continue
        i = _skip_address(script, i)
        while i < n and script[i] in " \t!":
            i += 1
        if i >= n:
            return _UNKNOWN, "ends in the middle of a command"
        cmd = script[i]
        i += 1
        if cmd in _SIMPLE_COMMANDS:
            continue
        if cmd in _TEXT_COMMANDS or cmd in _READ_COMMANDS:
            # Text and file names run to the end of the line.
            end = script.find("\n", i)
            i = n if end < 0 else end
            continue
        if cmd in _LABEL_COMMANDS:
            # Labels stop at `;` or blanks; whatever follows is checked as commands.
            while i < n and script[i] not in "; \t\n}":
                i += 1
            continue
        if cmd in "sy":
            parsed = _skip_s_or_y(script, i, cmd)
            if not isinstance(parsed, int):
                return parsed
            i = parsed
            continue
        if cmd in "wW":
            return _WRITE, f"uses `{cmd}`, which writes a file"
        if cmd == "e":
            return _EXEC, "uses `e`, which runs a command"
        return _UNKNOWN, f"uses `{cmd}`, a command this checker does not know"
    return None


def _skip_address(script: str, i: int) -> int:
    m = _ADDRESS.match(script, i)
    return m.end() if m else i


def _skip_s_or_y(script: str, i: int, cmd: str) -> int | Problem:
    if i >= len(script) or script[i] in "\\\n":
        return _UNKNOWN, f"has a `{cmd}` command this checker cannot follow"
    delim = script[i]
    i += 1
    for _ in range(2):
        while i < len(script) and script[i] != delim:
            if script[i] == "\n" and cmd == "y":
                return _UNKNOWN, f"has a `{cmd}` command this checker cannot follow"
            i += 2 if script[i] == "\\" else 1
        if i >= len(script):
            return _UNKNOWN, f"has an unterminated `{cmd}` command"
        i += 1
    if cmd == "y":
        return i
    start = i
    while i < len(script) and script[i] not in ";\n}":
        if script[i] in " \t":
            i += 1
            continue
        if script[i] not in _S_FLAGS:
            flag = script[i]
            if flag in "we":
                what = "writes a file" if flag == "w" else "runs the result as a command"
                caps = _WRITE if flag == "w" else _EXEC
                return caps, f"uses the `s///{flag}` flag, which {what}"
            return _UNKNOWN, f"has an `s` flag `{script[start : i + 1]}` this checker does not know"
        i += 1
    return i
