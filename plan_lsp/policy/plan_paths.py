"""Plan path validation: the plan file name comes from the model and is untrusted.

A name is accepted only if it is a plain relative `.md` path (subfolders allowed) that,
after resolving every symlink, still lies inside the plans directory. The error texts are
fixed templates shared by the plan tools, the CLI and the UI (DESIGN.md §5); every refusal
of the name itself starts with `Access denied:`.

Also `plan-lsp check plan-path` (DESIGN.md §8), through `check_plan_path_main`.

Self-contained on purpose (stdlib only): the rules read in one place.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_PLAN_NAME = "PLAN.md"
# The default layout `<workspace>/.plan-lsp/plans`; with it the workspace is known and a
# plans directory that a symlink carries out of the workspace is refused.
_DEFAULT_PLANS_TAIL = (".plan-lsp", "plans")

MAX_COMPONENT_CHARS = 128
MAX_NAME_CHARS = 255

# -- fixed messages: `{name}` is the name as given (control characters escaped) ------------
ACCESS_DENIED_OUTSIDE = "Access denied: {name} is outside the plans directory"
PLAN_DOES_NOT_EXIST = "{name} does not exist"
PLAN_IS_EMPTY = "{name} is empty"
PLAN_NOT_A_FILE = "{name} is not a regular file"
ACCESS_DENIED_EMPTY_NAME = "Access denied: the plan file name is empty"
ACCESS_DENIED_ABSOLUTE = (
    "Access denied: {name} is an absolute path; give a name inside the plans directory"
)
ACCESS_DENIED_DRIVE = "Access denied: {name} contains ':' (drive or stream names are not allowed)"
ACCESS_DENIED_TRAVERSAL = "Access denied: {name} contains '..'"
ACCESS_DENIED_BACKSLASH = "Access denied: {name} contains a backslash; separate folders with '/'"
ACCESS_DENIED_CONTROL = "Access denied: {name} contains control or invisible characters"
ACCESS_DENIED_NORMALISATION = "Access denied: {name} changes under Unicode NFKC normalisation"
ACCESS_DENIED_NOT_MARKDOWN = "Access denied: {name} is not a .md file"
ACCESS_DENIED_TOO_LONG = (
    f"Access denied: {{name}} is too long (at most {MAX_COMPONENT_CHARS} characters per "
    f"part and {MAX_NAME_CHARS} in all)"
)
ACCESS_DENIED_HIDDEN = "Access denied: {name} has a hidden part (starting with '.')"
ACCESS_DENIED_BAD_PART = (
    "Access denied: {name} has an empty part or a part with leading or trailing spaces"
)
ACCESS_DENIED_RESERVED = "Access denied: {name} uses a reserved device name"
ACCESS_DENIED_UNRESOLVABLE = "Access denied: {name} cannot be resolved (symlink loop?)"
ACCESS_DENIED_PLANS_DIR = "Access denied: the plans directory resolves outside the workspace"

# Categories refused anywhere in a name: controls (incl. NUL, DEL), format characters
# (zero-width, bidi overrides), unpaired surrogates, line/paragraph separators.
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
# Windows device names are not files there, whatever the extension.
_RESERVED_STEM = re.compile(r"(?i)^(con|prn|aux|nul|com[0-9]|lpt[0-9])(\..*)?$")
_SHOWN_MAX = 160


@dataclass(frozen=True)
class PlanPathResult:
    ok: bool
    resolved: str | None
    error: str | None


def shown_name(name: str) -> str:
    """The name as it appears in messages: invisible characters escaped, length capped."""
    out = []
    for char in name:
        if char.isprintable():
            out.append(char)
        else:
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
    shown = "".join(out)
    return shown if len(shown) <= _SHOWN_MAX else shown[: _SHOWN_MAX - 1] + "…"


def _refuse(template: str, name: str) -> PlanPathResult:
    return PlanPathResult(ok=False, resolved=None, error=template.format(name=shown_name(name)))


def _lexical_error(name: str) -> str | None:
    """The first rule the name breaks as a string, before the filesystem is consulted."""
    if name == "":
        return ACCESS_DENIED_EMPTY_NAME
    if any(unicodedata.category(char) in _REFUSED_CATEGORIES for char in name):
        return ACCESS_DENIED_CONTROL
    if unicodedata.normalize("NFKC", name) != name:
        return ACCESS_DENIED_NORMALISATION
    if name.startswith(("/", "~")):
        return ACCESS_DENIED_ABSOLUTE
    if ":" in name:
        return ACCESS_DENIED_DRIVE
    if "\\" in name:
        return ACCESS_DENIED_BACKSLASH
    parts = name.split("/")
    if len(name) > MAX_NAME_CHARS or any(len(part) > MAX_COMPONENT_CHARS for part in parts):
        return ACCESS_DENIED_TOO_LONG
    if any(part == ".." for part in parts):
        return ACCESS_DENIED_TRAVERSAL
    return _parts_error(parts)


def _parts_error(parts: Iterable[str]) -> str | None:
    """Rules for each folder/file part; applied to the name and to what it resolves to."""
    parts = list(parts)
    for part in parts:
        if part == "" or part != part.strip():
            return ACCESS_DENIED_BAD_PART
        if part.startswith("."):
            return ACCESS_DENIED_HIDDEN
        if _RESERVED_STEM.match(part):
            return ACCESS_DENIED_RESERVED
    if not parts[-1].endswith(".md"):
        return ACCESS_DENIED_NOT_MARKDOWN
    return None


def _resolve(path: Path) -> Path | None:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # symlink loops: RuntimeError before 3.13, OSError after
        return None


def _plans_dir_escapes_workspace(plans_dir: Path, plans_root: Path) -> bool:
    """True if the default-layout plans dir is carried out of its workspace by a symlink."""
    absolute = plans_dir.absolute()
    if tuple(absolute.parts[-2:]) != _DEFAULT_PLANS_TAIL:
        return False
    workspace = _resolve(absolute.parent.parent)
    return workspace is None or not plans_root.is_relative_to(workspace)


def validate_plan_path(plans_dir: Path, name: str | None, *, must_exist: bool) -> PlanPathResult:
    """Check a model-supplied plan name against the plans directory.

    `name` None means `PLAN.md`. With `must_exist=False` (plan_write) an accepted name may
    not exist yet; with `must_exist=True` (exit_plan_mode) it must be an existing regular
    file that is not empty (whitespace only counts as empty). `resolved` is the absolute
    path after symlinks — the path to read or write.
    """
    if name is None:
        name = DEFAULT_PLAN_NAME
    lexical = _lexical_error(name)
    if lexical is not None:
        return _refuse(lexical, name)

    plans_root = _resolve(plans_dir)
    if plans_root is None:
        return _refuse(ACCESS_DENIED_UNRESOLVABLE, name)
    if _plans_dir_escapes_workspace(plans_dir, plans_root):
        return _refuse(ACCESS_DENIED_PLANS_DIR, name)
    # Resolving after joining follows symlinks in every part, including folders in between.
    candidate = _resolve(plans_root / name)
    if candidate is None:
        return _refuse(ACCESS_DENIED_UNRESOLVABLE, name)
    if candidate == plans_root or not candidate.is_relative_to(plans_root):
        return _refuse(ACCESS_DENIED_OUTSIDE, name)
    # A symlink inside the plans dir may not lead to a hidden or non-Markdown target.
    resolved_error = _parts_error(candidate.relative_to(plans_root).parts)
    if resolved_error is not None:
        return _refuse(resolved_error, name)

    if candidate.exists() and not candidate.is_file():
        return _refuse(PLAN_NOT_A_FILE, name)
    if must_exist:
        if not candidate.exists():
            return _refuse(PLAN_DOES_NOT_EXIST, name)
        if _is_blank(candidate):
            return _refuse(PLAN_IS_EMPTY, name)
    return PlanPathResult(ok=True, resolved=str(candidate), error=None)


def _is_blank(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            # Reading in blocks: a huge file of spaces is still "empty", a plan returns early.
            while block := handle.read(65536):
                if block.strip():
                    return False
    except OSError:
        return True
    return True


# -- plan-lsp check plan-path ---------------------------------------------------------------


def _result_record(path: Any, result: PlanPathResult) -> dict[str, Any]:
    return {"path": path, "ok": result.ok, "resolved": result.resolved, "error": result.error}


def _check_line(plans_dir: Path, line: str) -> dict[str, Any]:
    try:
        request = json.loads(line)
    except json.JSONDecodeError as exc:
        return {"path": None, "ok": False, "resolved": None, "error": f"invalid JSON: {exc}"}
    if not isinstance(request, dict) or "path" not in request:
        error = 'each line must be a JSON object with a "path" key'
        return {"path": None, "ok": False, "resolved": None, "error": error}
    path = request["path"]
    if path is not None and not isinstance(path, str):
        error = '"path" must be a string or null'
        return {"path": path, "ok": False, "resolved": None, "error": error}
    return _result_record(path, validate_plan_path(plans_dir, path, must_exist=False))


def _stdin_lines() -> Iterator[str | None]:
    """Input lines, decoded one by one; None for a line that is not UTF-8."""
    raw = getattr(sys.stdin, "buffer", None)
    if raw is None:  # a text stream without bytes underneath (tests, embedding)
        yield from sys.stdin
        return
    for data in raw:
        try:
            yield data.decode("utf-8")
        except UnicodeDecodeError:
            yield None


def _emit(record: dict[str, Any]) -> None:
    # ASCII output: names may hold unpaired surrogates that no stdout encoding accepts.
    sys.stdout.write(json.dumps(record, ensure_ascii=True) + "\n")
    sys.stdout.flush()


def check_plan_path_main(argv: list[str]) -> int:
    """`plan-lsp check plan-path --plans-dir D [--stdin-jsonl] [PATH]`; argv after `plan-path`.

    One `{"path", "ok", "resolved", "error"}` line per checked name (`ok`: plan_write may
    write it). With `--stdin-jsonl`, each non-blank input line `{"path": ...}` (null means
    the default name) gives one output line in the same order; a bad line gives a record
    with `ok: false` and never stops the run. Exit status: 0 (1 if a single PATH is
    refused, 2 for usage errors).
    """
    parser = argparse.ArgumentParser(
        prog="plan-lsp check plan-path",
        description="Check plan file names as plan_write would.",
    )
    parser.add_argument("--plans-dir", required=True, type=Path)
    parser.add_argument("--stdin-jsonl", action="store_true")
    parser.add_argument("path", nargs="?", default=None)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return 0 if exc.code == 0 else 2
    plans_dir: Path = args.plans_dir
    if args.stdin_jsonl:
        if args.path is not None:
            sys.stderr.write("plan-lsp check plan-path: give PATH or --stdin-jsonl, not both\n")
            return 2
        for line in _stdin_lines():
            if line is None:
                error = "input line is not UTF-8"
                _emit({"path": None, "ok": False, "resolved": None, "error": error})
            elif line.strip():
                _emit(_check_line(plans_dir, line))
        return 0
    result = validate_plan_path(plans_dir, args.path, must_exist=False)
    _emit(_result_record(args.path, result))
    return 0 if result.ok else 1
