"""SQLite persistence of sessions, their event log, conversations and plan revisions.

One database per workspace at `<workspace>/.plan-lsp/state.db` (WAL). The event log is
append-only; the current state is a row per session rewritten in the same transaction as
the event that changed it, so a SIGKILL can never leave state and log disagreeing.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plan_lsp.policy.server_dir import prepare_state_file

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    workspace TEXT NOT NULL,
    state TEXT NOT NULL,
    updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    time REAL NOT NULL,
    kind TEXT NOT NULL,
    actor TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_session ON events (session_id, seq);
CREATE TABLE IF NOT EXISTS messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    conversation TEXT NOT NULL,
    message TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_by_conv ON messages (session_id, conversation, seq);
CREATE TABLE IF NOT EXISTS history (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    conversation TEXT NOT NULL,
    run_id TEXT,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS history_by_conv ON history (session_id, conversation, seq);
CREATE TABLE IF NOT EXISTS plan_revisions (
    session_id TEXT NOT NULL,
    rev INTEGER NOT NULL,
    path TEXT NOT NULL,
    text TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    time REAL NOT NULL,
    PRIMARY KEY (session_id, rev)
);
"""


@dataclass(frozen=True)
class Event:
    seq: int
    session_id: str
    time: float
    kind: str
    actor: str
    data: dict[str, Any]


@dataclass(frozen=True)
class PlanRevision:
    rev: int
    path: str
    text: str
    sha256: str
    time: float


class StateStore:
    """Thread-safe access to one workspace's state database."""

    def __init__(self, path: Path, warn: Callable[[str], None] | None = None) -> None:
        self.path = path
        self._warn = warn or (lambda msg: log.warning("%s", msg))
        self._lock = threading.RLock()
        self._conn = self._open()

    # -- opening ---------------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        problem = prepare_state_file(self.path)
        if problem is not None:
            self._warn(f"plan-lsp: state is kept in memory only (not saved): {problem}")
            self.path = Path(":memory:")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            return self._connect_checked()
        except sqlite3.DatabaseError as exc:
            aside = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
            self._move_aside(aside)
            self._warn(
                f"plan-lsp: the state database {self.path} could not be read ({exc}); "
                f"it was moved to {aside.name} and a fresh one was started."
            )
            return self._connect_checked()

    def _move_aside(self, aside: Path) -> None:
        for suffix in ("", "-wal", "-shm"):
            src = Path(str(self.path) + suffix)
            if src.exists():
                src.replace(Path(str(aside) + suffix))

    def _connect_checked(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            row = conn.execute("PRAGMA quick_check").fetchone()
            if row is None or row[0] != "ok":
                raise sqlite3.DatabaseError(f"integrity check failed: {row}")
            conn.executescript(_SCHEMA)
            conn.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema', ?)",
                (str(SCHEMA_VERSION),),
            )
        except sqlite3.DatabaseError:
            conn.close()
            raise
        return conn

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    # -- sessions --------------------------------------------------------------------------

    def first_session(self, workspace: str) -> tuple[str, dict[str, Any]] | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT id, state FROM sessions WHERE workspace = ? ORDER BY updated DESC LIMIT 1",
                (workspace,),
            ).fetchone()
        if row is None:
            return None
        return str(row[0]), json.loads(row[1])

    def save(
        self,
        session_id: str,
        workspace: str,
        state: dict[str, Any],
        event: tuple[str, str, dict[str, Any]] | None = None,
        revision: tuple[str, str, str] | None = None,
    ) -> int | None:
        """Write the session's state, the event that changed it and, for a submitted plan,
        its revision `(path, text, sha256)` — atomically, so a crash never separates them.
        Returns the new revision number when one was written (the event's data gets `rev`)."""
        now = time.time()
        rev: int | None = None
        with self._tx() as conn:
            if revision is not None:
                row = conn.execute(
                    "SELECT COALESCE(MAX(rev), 0) FROM plan_revisions WHERE session_id = ?",
                    (session_id,),
                ).fetchone()
                rev = int(row[0]) + 1
                conn.execute(
                    "INSERT INTO plan_revisions (session_id, rev, path, text, sha256, time) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (session_id, rev, *revision, now),
                )
            conn.execute(
                "INSERT INTO sessions (id, workspace, state, updated) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(id) DO UPDATE SET state = excluded.state, updated = excluded.updated",
                (session_id, workspace, json.dumps(state), now),
            )
            if event is not None:
                kind, actor, data = event
                if rev is not None:
                    data = {**data, "rev": rev}
                conn.execute(
                    "INSERT INTO events (session_id, time, kind, actor, data) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (session_id, now, kind, actor, json.dumps(data)),
                )
        return rev

    def append_event(self, session_id: str, kind: str, actor: str, data: dict[str, Any]) -> int:
        with self._tx() as conn:
            cur = conn.execute(
                "INSERT INTO events (session_id, time, kind, actor, data) VALUES (?, ?, ?, ?, ?)",
                (session_id, time.time(), kind, actor, json.dumps(data)),
            )
            assert cur.lastrowid is not None
            return cur.lastrowid

    def events(
        self, session_id: str, after: int = 0, kinds: tuple[str, ...] | None = None
    ) -> list[Event]:
        sql = "SELECT seq, session_id, time, kind, actor, data FROM events "
        sql += "WHERE session_id = ? AND seq > ?"
        params: list[Any] = [session_id, after]
        if kinds:
            sql += f" AND kind IN ({','.join('?' * len(kinds))})"
            params.extend(kinds)
        sql += " ORDER BY seq"
        with self._lock:
            rows = self._conn.execute(sql, params).fetchall()
        return [Event(r[0], r[1], r[2], r[3], r[4], json.loads(r[5])) for r in rows]

    def last_event_seq(self, session_id: str) -> int:
        with self._lock:
            row = self._conn.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id = ?", (session_id,)
            ).fetchone()
        return int(row[0])

    # -- conversations ---------------------------------------------------------------------

    def append_message(
        self, session_id: str, conversation: str, run_id: str, message: dict[str, Any]
    ) -> None:
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO messages (session_id, run_id, conversation, message) "
                "VALUES (?, ?, ?, ?)",
                (session_id, run_id, conversation, json.dumps(message)),
            )

    def messages(self, session_id: str, conversation: str) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT message FROM messages WHERE session_id = ? AND conversation = ? "
                "ORDER BY seq",
                (session_id, conversation),
            ).fetchall()
        return [json.loads(r[0]) for r in rows]

    def drop_run_messages(self, session_id: str, conversation: str, run_id: str) -> int:
        """Forget what one run added to a conversation (a prompt that never reached the
        model is not sent again). Returns how many messages were dropped."""
        with self._tx() as conn:
            cursor = conn.execute(
                "DELETE FROM messages WHERE session_id = ? AND conversation = ? AND run_id = ?",
                (session_id, conversation, run_id),
            )
            return int(cursor.rowcount)

    # -- what the client was shown (for re-rendering after a reload) -----------------------

    def append_history(
        self, session_id: str, conversation: str, payload: dict[str, Any], keep: int
    ) -> None:
        """Append one `planLsp/update` payload; only the newest `keep` are kept."""
        with self._tx() as conn:
            cursor = conn.execute(
                "INSERT INTO history (session_id, conversation, run_id, kind, payload) "
                "VALUES (?, ?, ?, ?, ?)",
                (
                    session_id,
                    conversation,
                    payload.get("runId"),
                    str(payload.get("kind", "")),
                    json.dumps(payload),
                ),
            )
            seq = cursor.lastrowid
            if seq is not None and seq % 256 == 0:
                conn.execute(
                    "DELETE FROM history WHERE session_id = ? AND seq <= ("
                    "SELECT seq FROM history WHERE session_id = ? ORDER BY seq DESC "
                    "LIMIT 1 OFFSET ?)",
                    (session_id, session_id, keep),
                )

    def history(self, session_id: str, conversation: str, limit: int) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT payload FROM (SELECT seq, payload FROM history WHERE session_id = ? "
                "AND conversation = ? ORDER BY seq DESC LIMIT ?) ORDER BY seq",
                (session_id, conversation, limit),
            ).fetchall()
        return [json.loads(r[0]) for r in rows]

    def update_history(
        self, session_id: str, run_id: str, kind: str, changes: dict[str, Any]
    ) -> None:
        """Merge `changes` into the history entries of one run and kind (e.g. a failed prompt)."""
        with self._tx() as conn:
            rows = conn.execute(
                "SELECT seq, payload FROM history WHERE session_id = ? AND run_id = ? AND kind = ?",
                (session_id, run_id, kind),
            ).fetchall()
            for seq, payload in rows:
                merged = {**json.loads(payload), **changes}
                conn.execute(
                    "UPDATE history SET payload = ? WHERE seq = ?", (json.dumps(merged), seq)
                )

    # -- plan revisions --------------------------------------------------------------------

    def revisions(self, session_id: str) -> list[PlanRevision]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT rev, path, text, sha256, time FROM plan_revisions "
                "WHERE session_id = ? ORDER BY rev",
                (session_id,),
            ).fetchall()
        return [PlanRevision(r[0], r[1], r[2], r[3], r[4]) for r in rows]
