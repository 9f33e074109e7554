"""Which file a planning round writes its plan to: every check of `validate_plan_path`, and
an approved plan's file is never written over (by any name: case, a second hard-linked name,
the same file). A round after an approved plan gets the first free `PLAN-<n>.md`, computed
here and never taken from the model (docs/plans.md)."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from plan_lsp.policy.plan_paths import (
    DEFAULT_PLAN_NAME,
    PlanPathResult,
    refuse,
    resolve_quietly,
    validate_plan_path,
)
from plan_lsp.policy.server_dir import PlansDir, locate_plans_dir

ACCESS_DENIED_APPROVED = (
    "Access denied: {name} holds an approved plan, which is kept as it was approved; "
    "write this plan to {free}"
)
ACCESS_DENIED_HARD_LINK = (
    "Access denied: {name} has another name (a hard link); plans are files of their own "
    "(remove the link or choose another name)"
)
NO_FREE_PLAN_NAME = "Access denied: no free plan file name next to {name} (up to {last})"
MAX_ROUND_NUMBER = 999  # the highest `<stem>-<n>.md` a new round may get


@dataclass(frozen=True)
class PlanRecords:
    """What the state store knows of the workspace's plan files (every session's):
    `approved` the files that hold a plan the user approved, `recorded` every file a
    session drafted, submitted or approved (approved ones included)."""

    approved: tuple[Path, ...] = ()
    recorded: tuple[Path, ...] = ()


def _key(path: Path, plans: PlansDir) -> str:
    """How a plan file is compared: its name inside the plans directory, case folded (a
    case-insensitive file system opens `plan.md` as `PLAN.md`); elsewhere its whole path."""
    own = _own_name(path, plans)
    return own.casefold() if own is not None else "/" + path.as_posix().casefold()


def _same_file(a: Path, b: Path) -> bool:
    """Both exist and are one file (a second name of the same file: case, hard link)."""
    try:
        sa, sb = a.lstat(), b.lstat()
    except OSError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def _holds_approved(candidate: Path, plans: PlansDir, records: PlanRecords) -> bool:
    key = _key(candidate, plans)
    return any(_key(p, plans) == key or _same_file(candidate, p) for p in records.approved)


_NUMBERED_STEM = re.compile(r"^(.*?)-[0-9]+$")


def _free_name(plans: PlansDir, name: str, records: PlanRecords) -> str | None:
    """The first `<stem>-<n>.md` (n = 2, 3, …) next to `name` that no file (of any kind,
    under any case) and no plan record holds; None when there is none up to the last."""
    folder, _, file = name.rpartition("/")
    stem = file[: -len(".md")]
    numbered = _NUMBERED_STEM.match(stem)
    if numbered and numbered.group(1):
        stem = numbered.group(1)
    taken = {_key(p, plans) for p in (*records.recorded, *records.approved)}
    directory = plans.path.joinpath(*folder.split("/")) if folder else plans.path
    prefix = folder + "/" if folder else ""
    try:
        taken |= {(prefix + entry).casefold() for entry in os.listdir(directory)}
    except OSError:
        pass  # no such folder yet: nothing in it
    for number in range(2, MAX_ROUND_NUMBER + 1):
        candidate = f"{prefix}{stem}-{number}.md"
        if candidate.casefold() not in taken:
            return candidate
    return None


def round_plan_path(
    plans_dir: Path,
    name: str | None,
    *,
    round_path: Path | None,
    records: PlanRecords,
    workspace: Path | None = None,
) -> PlanPathResult:
    """The file a planning round writes its plan to (`validate_plan_path`'s checks); an
    approved plan is never written over. No name: `PLAN.md` unless that holds an approved
    plan or has a hard link, then `round_path`, else the first free `PLAN-<n>.md`. A name
    holding an approved plan is refused, naming the free one to use instead."""
    requested = DEFAULT_PLAN_NAME if name is None else name
    checked = validate_plan_path(plans_dir, requested, must_exist=False, workspace=workspace)
    if not checked.ok or checked.resolved is None:
        return checked
    plans = locate_plans_dir(plans_dir, workspace)
    assert not isinstance(plans, str)  # validate_plan_path refused it already
    linked = _has_other_names(Path(checked.resolved))
    if not _holds_approved(Path(checked.resolved), plans, records):
        if not linked:
            return PlanPathResult(ok=True, resolved=checked.resolved, error=None, name=requested)
        if name is not None:
            return refuse(ACCESS_DENIED_HARD_LINK, requested)
        # The default file has a second name: a file of its own, as after an approval.
    own = _own_name(round_path, plans) if round_path is not None else None
    if own is not None and (
        _holds_approved(plans.path / own, plans, records) or _has_other_names(plans.path / own)
    ):
        own = None
    if name is None and own is not None:
        return _checked_name(plans_dir, own, workspace)
    free = own or _free_name(plans, requested, records)
    if free is None:
        last = f"{requested[: -len('.md')]}-{MAX_ROUND_NUMBER}.md"
        return refuse(NO_FREE_PLAN_NAME, requested, last=last)
    if name is not None:
        return refuse(ACCESS_DENIED_APPROVED, name, free=free)
    return _checked_name(plans_dir, free, workspace)


def _own_name(path: Path, plans: PlansDir) -> str | None:
    """`path`'s name inside the plans directory, as spelled; None outside it."""
    for base in (plans.path, resolve_quietly(plans.path)):
        if base is None:
            continue
        try:
            return path.relative_to(base).as_posix()
        except ValueError:
            continue
    return None


def _has_other_names(path: Path) -> bool:
    """A regular file that also goes by another name (a hard link, in the repository as it
    arrived or made since): an editor saving the plan in place would write that file too."""
    try:
        st = path.lstat()
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_nlink > 1


def _checked_name(plans_dir: Path, name: str, workspace: Path | None) -> PlanPathResult:
    checked = validate_plan_path(plans_dir, name, must_exist=False, workspace=workspace)
    if not checked.ok:
        return checked
    if checked.resolved is not None and _has_other_names(Path(checked.resolved)):
        return refuse(ACCESS_DENIED_HARD_LINK, name)
    return PlanPathResult(ok=True, resolved=checked.resolved, error=None, name=name)
