"""The workspace's plans as history, replayed from the event log of every session. An
approved plan's file is never written over, so the list is also what is on disk.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from plan_lsp.policy.plan_rounds import PlanRecords
from plan_lsp.policy.safe_fs import open_regular, relative_parts
from plan_lsp.policy.server_dir import locate_plans_dir
from plan_lsp.session.store import Event, StateStore

PlanState = Literal["drafting", "submitted", "rejected", "approved", "done"]

# The events that move a plan; `conversation_switched` only matters for the current path.
PLAN_EVENTS = (
    "plan_drafting",
    "plan_submitted",
    "plan_rejected",
    "plan_approved",
    "approved_plan_changed",
    "do_completed",
)


@dataclass(frozen=True)
class PlanEntry:
    """One plan file of one session."""

    session_id: str
    path: str
    status: PlanState
    revisions: int
    updated: float
    approved_at: float | None = None
    # An approved plan whose Do run ended with checklist items open: which, and why.
    carried_out: str | None = None


def _replay(events: Iterable[Event]) -> dict[tuple[str, str], PlanEntry]:
    entries: dict[tuple[str, str], PlanEntry] = {}
    current: dict[str, str] = {}  # session → the plan its last plan event was about
    approved: dict[str, str] = {}  # session → its last approved plan

    def put(
        session: str, path: str, status: PlanState, time: float, approved_at: float | None = None
    ) -> None:
        key = (session, path)
        old = entries.get(key)
        if old is None:
            entries[key] = PlanEntry(session, path, status, 0, time, approved_at)
        else:
            when = approved_at if approved_at is not None else old.approved_at
            entries[key] = replace(old, status=status, updated=time, approved_at=when)

    for event in events:
        sid = event.session_id
        path = event.data.get("path")
        if event.kind in ("plan_drafting", "plan_submitted", "plan_approved"):
            if not isinstance(path, str):
                continue
            current[sid] = path
            if event.kind == "plan_approved":
                approved[sid] = path
                put(sid, path, "approved", event.time, approved_at=event.time)
            else:
                status: PlanState = "drafting" if event.kind == "plan_drafting" else "submitted"
                put(sid, path, status, event.time)
        elif event.kind == "plan_rejected" and sid in current:
            put(sid, current[sid], "rejected", event.time)
        elif event.kind == "approved_plan_changed" and isinstance(path, str):
            if (sid, path) in entries:
                put(sid, path, "drafting", event.time)
        elif event.kind == "do_completed" and sid in approved:
            entry = entries.get((sid, approved[sid]))
            partly = event.data.get("open")
            if entry is not None and entry.status == "approved" and isinstance(partly, str):
                entries[(sid, approved[sid])] = replace(entry, carried_out=partly)
            elif entry is not None and entry.status == "approved":
                put(sid, approved[sid], "done", event.time)
    return entries


def plan_entries(store: StateStore) -> list[PlanEntry]:
    """Every plan of the workspace, oldest first (by when it last changed)."""
    entries = _replay(store.workspace_events(PLAN_EVENTS))
    counts: dict[tuple[str, str], int] = {}
    for session_id, _rev, path, _time in store.revision_index():
        counts[(session_id, path)] = counts.get((session_id, path), 0) + 1
    out = [replace(e, revisions=counts.get((e.session_id, e.path), 0)) for e in entries.values()]
    return sorted(out, key=lambda e: e.updated)


def plan_records(store: StateStore, extra_approved: str | None = None) -> PlanRecords:
    """What `round_plan_path` must know: the files holding approved plans (any session's,
    and `extra_approved`, the session's own approved plan) and every recorded plan file."""
    approved: list[Path] = []
    recorded: list[Path] = []
    for event in store.workspace_events(("plan_drafting", "plan_submitted", "plan_approved")):
        path = event.data.get("path")
        if isinstance(path, str):
            recorded.append(Path(path))
            if event.kind == "plan_approved":
                approved.append(Path(path))
    recorded += [Path(path) for _sid, _rev, path, _time in store.revision_index()]
    if extra_approved is not None:
        approved.append(Path(extra_approved))
    return PlanRecords(
        approved=tuple(dict.fromkeys(approved)), recorded=tuple(dict.fromkeys(recorded))
    )


def latest_entry(entries: Iterable[PlanEntry], path: Path) -> PlanEntry | None:
    """The newest entry of the plan file `path` (any session), or None."""
    found = None
    for entry in entries:
        if Path(entry.path).resolve() == path:
            found = entry
    return found


def day(time: float) -> str:
    """A date as the lenses and the list show it (UTC)."""
    return datetime.fromtimestamp(time, UTC).strftime("%Y-%m-%d")


def iso(time: float) -> str:
    return datetime.fromtimestamp(time, UTC).isoformat(timespec="seconds")


# A plan's title: its first heading within the first lines, read from at most this much of
# the file.
TITLE_MAX_CHARS = 120
TITLE_LINES = 50
TITLE_READ_BYTES = 64 * 1024
# Never shown in a title: controls, format characters (bidi overrides, zero-width), line and
# paragraph separators, surrogates, private-use and unassigned code points.
_NOT_IN_TITLES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def clean_title(text: str) -> str:
    """One line of visible characters: the characters above become spaces, runs of
    white space one space, at most `TITLE_MAX_CHARS` characters."""
    kept = "".join(" " if unicodedata.category(c) in _NOT_IN_TITLES else c for c in text)
    return " ".join(kept.split())[:TITLE_MAX_CHARS].rstrip()


def plan_title(text: str | None, name: str) -> str:
    """The first heading of `text` (a plan's first lines), cleaned; else the file's name."""
    for line in (text or "").splitlines()[:TITLE_LINES]:
        heading = line.strip()
        if heading.startswith("#"):
            title = clean_title(heading.lstrip("#"))
            if title:
                return title
    return clean_title(name) or "plan"


def plan_head(plans_dir: Path, workspace: Path, path: Path) -> str | None:
    """The first `TITLE_READ_BYTES` of the plan file `path`, walked from the workspace
    folder without following a link (on the way or at the end), never a FIFO or any other
    non-regular file; None when it is not a regular file of the plans directory."""
    plans = locate_plans_dir(plans_dir, workspace)
    if isinstance(plans, str):
        return None
    try:
        relative_parts(plans.path, path)  # below the plans directory, as spelled
        with open_regular(plans.anchor, path, max_bytes=None) as handle:
            return handle.read(TITLE_READ_BYTES).decode("utf-8", errors="replace")
    except (OSError, ValueError):
        return None
