"""`plan-lsp check command` (README, "Command line"); its argv is parsed in `plan_lsp/cli.py`.

One command: one JSON object, exit 0 when allowed, 1 when not. `--stdin-jsonl`: one
`{"cmd": ...}` a line in, one verdict a line out; a bad line gets allowed=false and a reason.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from plan_lsp.policy.shell.classifier import classify_command
from plan_lsp.policy.shell.model import Protection


def default_protection() -> Protection:
    """What this machine would use: `sandboxed` when a sandbox proves it works here."""
    from plan_lsp.policy.sandbox import sandbox_kind

    return "sandboxed" if sandbox_kind() else "classified"


def _refused(cmd: object, reason: str) -> dict[str, Any]:
    return {"cmd": cmd, "allowed": False, "capabilities": [], "reasons": [reason]}


def classify_json(cmd: str, protection: Protection) -> dict[str, Any]:
    try:
        return classify_command(cmd, protection=protection, roots=[Path.cwd()]).to_json(cmd)
    except Exception as exc:  # one bad command never stops the batch or prints a traceback
        return _refused(cmd, f"the classifier failed on this command: {exc!r}")


def classify_line(line: str, lineno: int, protection: Protection) -> dict[str, Any]:
    try:
        obj = json.loads(line)
    except ValueError as exc:
        return _refused(None, f"line {lineno} is not valid JSON: {exc}")
    except RecursionError:
        return _refused(None, f"line {lineno} is JSON nested too deeply")
    if not isinstance(obj, dict):
        return _refused(None, f'line {lineno} is not a JSON object like {{"cmd": "..."}}')
    cmd = obj.get("cmd")
    if not isinstance(cmd, str):
        return _refused(cmd, f'line {lineno} has no string "cmd" field')
    return classify_json(cmd, protection)


def check_command(cmd: str | None, *, stdin_jsonl: bool, protection: Protection | None) -> int:
    level = protection or default_protection()
    out = sys.stdout
    if not stdin_jsonl:
        assert cmd is not None
        result = classify_json(cmd, level)
        out.write(json.dumps(result) + "\n")
        out.flush()
        return 0 if result["allowed"] else 1
    for lineno, raw in enumerate(sys.stdin, start=1):
        line = raw.rstrip("\r\n")
        out.write(json.dumps(classify_line(line, lineno, level)) + "\n")
        out.flush()
    return 0
