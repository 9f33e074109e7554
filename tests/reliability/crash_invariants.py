"""What must hold in a workspace's state database after any crash: the event log has no gap,
its kinds come in a legal order, and replaying it gives exactly the state that was saved
and restored (so every committed state change has its event)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Plan statuses each plan event may start from (the session's transition table, restated).
_PLAN_EVENT_FROM: dict[str, set[str]] = {
    "plan_drafting": {"none", "drafting", "submitted", "approved", "rejected"},
    "plan_submitted": {"none", "drafting", "submitted", "rejected"},
    "plan_approved": {"submitted", "drafting", "approved"},
    "plan_rejected": {"submitted", "drafting"},
    "approved_plan_changed": {"approved"},
    "do_completed": {"approved"},
}
_PLAN_EVENT_TO = {
    "plan_drafting": "drafting",
    "plan_submitted": "submitted",
    "plan_approved": "approved",
    "plan_rejected": "rejected",
    "approved_plan_changed": "drafting",
}


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class Replay:
    """The session state the event log implies."""

    mode: str = ""
    plan_status: str = "none"
    approved_sha: str | None = None
    open_run: str | None = None
    revisions: list[int] = field(default_factory=list)
    restores: int = 0
    killed_runs: int = 0


def read_events(db: Path) -> list[tuple[int, str, str, dict[str, Any]]]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT seq, kind, actor, data FROM events ORDER BY seq").fetchall()
    finally:
        con.close()
    return [(int(r[0]), str(r[1]), str(r[2]), json.loads(r[3])) for r in rows]


def read_saved_state(db: Path) -> dict[str, Any]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT state FROM sessions").fetchall()
        revs = con.execute("SELECT rev, sha256, text FROM plan_revisions ORDER BY rev").fetchall()
    finally:
        con.close()
    assert len(rows) == 1, f"one session per workspace, found {len(rows)}"
    state: dict[str, Any] = json.loads(rows[0][0])
    state["_revisions"] = [(int(r[0]), str(r[1]), str(r[2])) for r in revs]
    return state


def replay_events(events: list[tuple[int, str, str, dict[str, Any]]]) -> Replay:
    """Replay the log, failing on a gap or on a kind that is illegal where it stands."""
    seqs = [e[0] for e in events]
    assert seqs == list(range(1, len(seqs) + 1)), f"the event log has a gap: {seqs}"
    assert events and events[0][1] == "session_created", events[:1]
    replay = Replay(mode=events[0][3]["mode"])
    for seq, kind, actor, data in events[1:]:
        where = f"event {seq} ({kind}) after status {replay.plan_status!r}, mode {replay.mode!r}"
        assert kind != "session_created", where
        if kind == "session_restored":
            assert actor == "restore", where
            assert data["mode"] == replay.mode, f"{where}: restored {data}"
            assert data["planStatus"] == replay.plan_status, f"{where}: restored {data}"
            replay.restores += 1
            if replay.open_run is not None:  # the process died during that run
                replay.killed_runs += 1
                replay.open_run = None
        elif kind == "mode_changed":
            assert data["from"] == replay.mode and data["to"] != replay.mode, where
            replay.mode = data["to"]
        elif kind in _PLAN_EVENT_FROM:
            assert replay.plan_status in _PLAN_EVENT_FROM[kind], where
            if kind == "plan_submitted":
                assert replay.mode == "plan", where
                assert data["rev"] == len(replay.revisions) + 1, where
                replay.revisions.append(data["rev"])
            if kind == "plan_approved":
                assert data["from"] == replay.mode and data["to"] == "build", where
                replay.mode = "build"
                replay.approved_sha = data["sha256"]
            replay.plan_status = _PLAN_EVENT_TO.get(kind, replay.plan_status)
        elif kind == "run_started":
            assert replay.open_run is None, f"{where}: run {replay.open_run} still open"
            replay.open_run = data["runId"]
        elif kind == "run_finished":
            assert replay.open_run == data["runId"], where
            replay.open_run = None
    return replay


def check_database(db: Path, restored: dict[str, Any]) -> Replay:
    """The log, the saved state row and the state the restarted server reports agree."""
    replay = replay_events(read_events(db))
    saved = read_saved_state(db)
    for source, mode, status in (
        ("saved state", saved["mode"], saved["planStatus"]),
        ("restored state", restored["mode"], restored["planStatus"]),
    ):
        assert (mode, status) == (replay.mode, replay.plan_status), (
            f"{source} {(mode, status)} != event log {(replay.mode, replay.plan_status)}"
        )
    approved = saved.get("approved")
    if approved is not None:
        assert sha256_text(approved["text"]) == approved["sha256"], "approved hash != text"
        assert approved["sha256"] == replay.approved_sha
    restored_approved = restored.get("approvedPlan")
    assert (restored_approved or {}).get("sha256") == (approved or {}).get("sha256")
    # Each stored revision was announced by its plan_submitted event, and vice versa.
    stored = saved["_revisions"]
    assert [r[0] for r in stored] == replay.revisions, (
        f"plan revisions {[r[0] for r in stored]} != plan_submitted events {replay.revisions}"
    )
    for _rev, digest, text in stored:
        assert sha256_text(text) == digest
    return replay
