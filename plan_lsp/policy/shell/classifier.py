"""classify_command: one entry point, two rule sets.

- `classified` (no sandbox: the only wall): the strict allow-list (`strict.py`).
- `sandboxed` (the OS sandbox is the wall): `intent.py` refuses what is identified as
  changing things or using a network that is off; the rest runs in the sandbox.

Both refuse, with a reason, empty input, NUL bytes, input over MAX_CHARS or nested deeper than
MAX_NESTING, and characters beyond U+FFFF (tree-sitter-bash 0.25 can crash on them).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from plan_lsp.policy.shell.model import Classification, Findings, Protection

MAX_CHARS = 16_384
MAX_NESTING = 64
_CONTROL = re.compile(r"[\x01-\x08\x0b-\x1f\x7f]")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_OPENERS = frozenset("({[")


def classify_command(
    cmd: str,
    *,
    protection: Protection = "classified",
    roots: Sequence[Path] | None = None,
    cwd: Path | None = None,
    network: bool = False,
) -> Classification:
    findings = Findings()
    try:
        _classify(cmd, findings, protection, roots, cwd)
    except RecursionError:
        findings.fatal("the command is nested too deeply to check")
    return findings.decide(protection, network)


def _classify(
    cmd: str,
    findings: Findings,
    protection: Protection,
    roots: Sequence[Path] | None,
    cwd: Path | None,
) -> None:
    if protection not in ("classified", "sandboxed"):
        findings.fatal(f"unknown protection level {protection!r}")
        return
    if not cmd.strip():
        findings.fatal("the command is empty")
        return
    if "\x00" in cmd:
        findings.fatal("the command contains a NUL byte")
        return
    if len(cmd) > MAX_CHARS:
        findings.fatal(f"the command is longer than {MAX_CHARS} characters")
        return
    astral = _ASTRAL.search(cmd)
    if astral is not None:
        # tree-sitter-bash 0.25 reads past its tables on some of these (after a `{` it
        # crashes the process: tree-sitter/tree-sitter-bash#337); they never reach it.
        findings.fatal(
            f"the command contains U+{ord(astral.group(0)):X}; characters beyond U+FFFF can "
            "crash the bash parser, so they are not accepted"
        )
        return
    openers = cmd.count("(") + cmd.count("{") + cmd.count("[")
    if openers > MAX_NESTING and _bracket_depth(cmd) > MAX_NESTING:
        findings.fatal(f"the command is nested more than {MAX_NESTING} levels deep")
        return
    bad = _CONTROL.search(cmd)
    if bad is not None:
        findings.unproven(f"the command contains the control character {bad.group(0)!r}")
        if protection == "classified":
            return
    # The rule sets are imported on first use (the package imports without them).
    from plan_lsp.policy.shell.database import database
    from plan_lsp.policy.shell.intent import classify_sandboxed
    from plan_lsp.policy.shell.paths import PathPolicy
    from plan_lsp.policy.shell.strict import classify_strict

    global _loaded
    if _loaded is None:
        _loaded = True  # the check classifies its examples through this function
        try:
            _check_examples()
        except BaseException:
            _loaded = None
            raise
    if protection == "sandboxed":
        classify_sandboxed(cmd, findings)
        return
    work = cwd if cwd is not None else (roots[0] if roots else os.getcwd())
    classify_strict(cmd, findings, PathPolicy(roots or [work], work, database().harmless_paths))


# True once the rule sets are loaded and their examples checked.
_loaded: bool | None = None


def _check_examples() -> None:
    """Every entry's `examples` are accepted under `classified`, its `not_examples` refused
    (as Codex's execpolicy checks `match`/`not_match`), in an empty folder: a database that
    contradicts its own examples does not load."""
    import tempfile

    from plan_lsp.policy.shell.database import database, examples

    wrong: list[str] = []
    with tempfile.TemporaryDirectory(prefix="plan-lsp-examples-") as folder:
        root = Path(folder)
        for cmd, accepted in examples(database()):
            result = classify_command(cmd, roots=[root], cwd=root)
            if result.allowed != accepted:
                wrong.append(f"{cmd!r} is {'refused' if accepted else 'accepted'}: "
                             + "; ".join(result.reasons))  # fmt: skip
    if wrong:
        raise ValueError("programs.toml contradicts its examples: " + " | ".join(wrong))


def _bracket_depth(cmd: str) -> int:
    """How deep `(`, `{` and `[` nest (quotes not considered: an over-estimate only
    refuses sooner)."""
    depth = deepest = 0
    for c in cmd:
        if c in _OPENERS:
            depth += 1
            deepest = max(deepest, depth)
        elif c in ")}]" and depth:
            depth -= 1
    return deepest
