"""Plan path validation: the plan file name comes from the model and is untrusted.

Accepted: a plain relative `.md` path in the plans directory below `.plan-lsp/`, no link on
the way. Refusals are fixed templates starting `Access denied:`. Also `plan-lsp check
plan-path` (`check_plan_path_main`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import stat
import sys
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plan_lsp.policy.safe_fs import WriteRefused, Written, write_text
from plan_lsp.policy.server_dir import PlansDir, locate_plans_dir

DEFAULT_PLAN_NAME = "PLAN.md"

MAX_COMPONENT_CHARS = 128
MAX_NAME_CHARS = 255

# Fixed messages: `{name}` is the name as given (control characters escaped).
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
ACCESS_DENIED_SYMLINK = (
    "Access denied: {name} is (or lies under) a symbolic link; plans are regular files in "
    "real folders of the plans directory (remove the link or choose another name)"
)
ACCESS_DENIED_NOT_A_FOLDER = "Access denied: {name} goes through something that is not a folder"

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
    # The checked name inside the plans directory (set by `round_plan_path`).
    name: str | None = None


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


def refuse(template: str, name: str, **names: str) -> PlanPathResult:
    """`template` filled with `name` (and `names`) as messages show them."""
    shown = {key: shown_name(value) for key, value in {"name": name, **names}.items()}
    return PlanPathResult(ok=False, resolved=None, error=template.format(**shown))


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


def resolve_quietly(path: Path) -> Path | None:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # symlink loops: RuntimeError before 3.13, OSError after
        return None


def _link_error(link: Path, plans: PlansDir) -> str:
    """The message for a link met inside the plans directory: where it leads decides."""
    target = resolve_quietly(link)
    if target is None:
        return ACCESS_DENIED_UNRESOLVABLE
    root = resolve_quietly(plans.path) or plans.path
    if target == root or not target.is_relative_to(root):
        return ACCESS_DENIED_OUTSIDE
    return ACCESS_DENIED_SYMLINK


def _walk_error(plans: PlansDir, parts: list[str]) -> tuple[str | None, bool]:
    """(the first problem on the way to the plan file, whether the file exists)."""
    current = plans.path
    for index, part in enumerate(parts):
        current = current / part
        try:
            st = current.lstat()
        except FileNotFoundError:
            return None, False
        except OSError:
            return ACCESS_DENIED_UNRESOLVABLE, False
        if stat.S_ISLNK(st.st_mode):
            return _link_error(current, plans), False
        last = index == len(parts) - 1
        if not last and not stat.S_ISDIR(st.st_mode):
            return ACCESS_DENIED_NOT_A_FOLDER, False
        if last and not stat.S_ISREG(st.st_mode):
            return PLAN_NOT_A_FILE, True
    return None, True


def validate_plan_path(
    plans_dir: Path, name: str | None, *, must_exist: bool, workspace: Path | None = None
) -> PlanPathResult:
    """Check a model-supplied plan name (None: `PLAN.md`) against the plans directory;
    `must_exist` (exit_plan_mode) also wants a regular file that is not blank."""
    if name is None:
        name = DEFAULT_PLAN_NAME
    lexical = _lexical_error(name)
    if lexical is not None:
        return refuse(lexical, name)
    plans = locate_plans_dir(plans_dir, workspace)
    if isinstance(plans, str):
        return PlanPathResult(ok=False, resolved=None, error=plans)
    parts = name.split("/")
    problem, exists = _walk_error(plans, parts)
    if problem is not None:
        return refuse(problem, name)
    candidate = plans.path.joinpath(*parts)
    if must_exist:
        if not exists:
            return refuse(PLAN_DOES_NOT_EXIST, name)
        if _is_blank(candidate):
            return refuse(PLAN_IS_EMPTY, name)
    return PlanPathResult(ok=True, resolved=str(candidate), error=None)


def _is_blank(path: Path) -> bool:
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return True
        with os.fdopen(fd, "rb") as handle:
            # Reading in blocks: a huge file of spaces is still "empty", a plan returns early.
            while block := handle.read(65536):
                if block.strip():
                    return False
    except OSError:
        return True
    return True


def _plan_file(plans_dir: Path, path: Path, workspace: Path | None) -> tuple[PlansDir, Path] | str:
    """(plans directory, the checked path) for a plan file named by its path, or why not."""
    plans = locate_plans_dir(plans_dir, workspace)
    if isinstance(plans, str):
        return plans
    for base in (plans.path, plans_dir.absolute()):
        try:
            parts = path.relative_to(base).parts
        except ValueError:
            continue
        if parts:
            name = "/".join(parts)
            checked = validate_plan_path(plans_dir, name, must_exist=False, workspace=workspace)
            if not checked.ok or checked.resolved is None:
                return checked.error or "invalid plan path"
            return plans, Path(checked.resolved)
    return ACCESS_DENIED_OUTSIDE.format(name=shown_name(str(path)))


def plan_file_problem(plans_dir: Path, path: Path, *, workspace: Path | None = None) -> str | None:
    """Why `write_plan_file` would refuse `path` now (the fixed message), or None."""
    found = _plan_file(plans_dir, path, workspace)
    return found if isinstance(found, str) else None


def write_plan_file(
    plans_dir: Path, path: Path, text: str, *, workspace: Path | None = None
) -> Written:
    """Write the plan file `path` atomically, validated as `plan_write`; WriteRefused says why."""
    found = _plan_file(plans_dir, path, workspace)
    if isinstance(found, str):
        raise WriteRefused(found)
    plans, target = found
    return write_text(plans.anchor, target, text)


def _result_record(path: Any, result: PlanPathResult) -> dict[str, Any]:
    return {"path": path, "ok": result.ok, "resolved": result.resolved, "error": result.error}


def _refused_record(path: Any, error: str) -> dict[str, Any]:
    return _result_record(path, PlanPathResult(ok=False, resolved=None, error=error))


def _check_line(plans_dir: Path, line: str) -> dict[str, Any]:
    try:
        request = json.loads(line)
    except json.JSONDecodeError as exc:
        return _refused_record(None, f"invalid JSON: {exc}")
    if not isinstance(request, dict) or "path" not in request:
        return _refused_record(None, 'each line must be a JSON object with a "path" key')
    path = request["path"]
    if path is not None and not isinstance(path, str):
        return _refused_record(path, '"path" must be a string or null')
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
    """`plan-lsp check plan-path --plans-dir D [--stdin-jsonl] [PATH]`: one
    `{"path", "ok", "resolved", "error"}` line a name; exit 1 for a refused PATH, 2 usage."""
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
                _emit(_refused_record(None, "input line is not UTF-8"))
            elif line.strip():
                _emit(_check_line(plans_dir, line))
        return 0
    result = validate_plan_path(plans_dir, args.path, must_exist=False)
    _emit(_result_record(args.path, result))
    return 0 if result.ok else 1
