"""`plan-lsp check command [--allow CAPS] [--stdin-jsonl] [CMD]` (DESIGN.md §8).

One command: prints one JSON object and exits 0 when allowed, 1 when not.
Batch (`--stdin-jsonl`): one `{"cmd": ...}` per input line → one
`{"cmd", "allowed", "capabilities", "reasons"}` per output line, in order; a bad line gets
an output line with allowed=false and a reason, and the batch goes on.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from plan_lsp.policy.shell.classifier import classify_command
from plan_lsp.policy.shell.model import CAPABILITIES, PLAN_ALLOWED_CAPABILITIES


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # never exit from inside a library call
        raise _UsageError(message)


def _parser() -> _Parser:
    p = _Parser(
        prog="plan-lsp check command",
        description="Classify shell commands the way plan mode does.",
    )
    p.add_argument(
        "--allow",
        default=None,
        help="comma-separated capabilities to allow (default: the read:* ones); "
        "`read:*` style wildcards and `all` are accepted",
    )
    p.add_argument(
        "--stdin-jsonl",
        action="store_true",
        help='read one {"cmd": ...} JSON object per line from stdin',
    )
    p.add_argument("cmd", nargs="?", help="the command line to classify")
    return p


def parse_allow(spec: str | None) -> frozenset[str]:
    if spec is None:
        return PLAN_ALLOWED_CAPABILITIES
    allowed: set[str] = set()
    for raw in spec.split(","):
        item = raw.strip()
        if not item:
            continue
        if item == "all":
            allowed |= CAPABILITIES
        elif item.endswith(":*"):
            matched = {c for c in CAPABILITIES if c.startswith(item[:-1])}
            if not matched:
                raise _UsageError(f"--allow: no capability matches {item!r}")
            allowed |= matched
        elif item in CAPABILITIES:
            allowed.add(item)
        else:
            known = " ".join(sorted(CAPABILITIES))
            raise _UsageError(f"--allow: unknown capability {item!r} (known: {known})")
    return frozenset(allowed)


def _bad_line(cmd: object, reason: str) -> dict[str, Any]:
    return {"cmd": cmd, "allowed": False, "capabilities": [], "reasons": [reason]}


def classify_line(line: str, lineno: int, allowed: frozenset[str]) -> dict[str, Any]:
    try:
        obj = json.loads(line)
    except ValueError as exc:
        return _bad_line(None, f"line {lineno} is not valid JSON: {exc}")
    if not isinstance(obj, dict):
        return _bad_line(None, f'line {lineno} is not a JSON object like {{"cmd": "..."}}')
    cmd = obj.get("cmd")
    if not isinstance(cmd, str):
        return _bad_line(cmd, f'line {lineno} has no string "cmd" field')
    try:
        return classify_command(cmd, allowed).to_json(cmd)
    except Exception as exc:  # one bad command never stops the batch
        return _bad_line(cmd, f"the classifier failed on this command: {exc!r}")


def check_command_main(argv: list[str]) -> int:
    try:
        args = _parser().parse_args(argv)
        allowed = parse_allow(args.allow)
        if args.stdin_jsonl and args.cmd is not None:
            raise _UsageError("give either CMD or --stdin-jsonl, not both")
        if not args.stdin_jsonl and args.cmd is None:
            raise _UsageError("give a command to classify, or --stdin-jsonl")
    except _UsageError as exc:
        sys.stderr.write(f"plan-lsp check command: {exc}\n")
        return 2
    out = sys.stdout
    if not args.stdin_jsonl:
        result = classify_command(args.cmd, allowed)
        out.write(json.dumps(result.to_json(args.cmd)) + "\n")
        out.flush()
        return 0 if result.allowed else 1
    for lineno, raw in enumerate(sys.stdin, start=1):
        line = raw.rstrip("\r\n")
        out.write(json.dumps(classify_line(line, lineno, allowed)) + "\n")
        out.flush()
    return 0
