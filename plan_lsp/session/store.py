"""SQLite persistence of sessions, their event log, conversations and plan revisions.

One database per workspace at `<workspace>/.plan-lsp/state.db` (WAL). The event log is
append-only; the current state is a row per session rewritten in the same transaction as
the event that changed it, so a SIGKILL can never leave state and log disagreeing.

The file lies in the repository's folder, so it is trusted only as far as the server wrote
it (`trust.py`, `state_db.py`): it is opened only if this server created it for this user,
every row written carries a seal under the user's key, and a row whose seal does not match
is never read back (the user is told how many were skipped).
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plan_lsp.policy.server_dir import prepare_state_file
from plan_lsp.session.state_db import MEMORY, SCHEMA, Opened, open_state_db, row_seal
from plan_lsp.session.trust import KeyUnavailable, StateKey, load_user_key, same_seal

log = logging.getLogger(__name__)

# The schema lives with the code that checks it; `_SCHEMA` is kept for callers of old.
_SCHEMA = SCHEMA


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
    """Thread-safe access to one workspace's state database.

    `key` seals what is written (default: the user's key, `trust.load_user_key`); without
    one, or where the file may not be kept, state lives in memory only and the user is told.
    """

    def __init__(
        self,
        path: Path,
        warn: Callable[[str], None] | None = None,
        key: StateKey | None = None,
    ) -> None:
        self.path = path
        self._warn = warn or (lambda msg: log.warning("%s", msg))
        self._lock = threading.RLock()
        self._key = key or StateKey.ephemeral()
        self._db_id = ""
        self._skipped: set[str] = set()
        self._conn = self._open(key)

    # -- opening ---------------------------------------------------------------------------

    def _open(self, key: StateKey | None) -> sqlite3.Connection:
        problem = prepare_state_file(self.path)
        if problem is None and key is None:
            try:
                self._key = load_user_key()
            except KeyUnavailable as exc:
                problem = str(exc)
        if problem is None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                return self._opened(open_state_db(self.path, self._key, self._warn))
            except (OSError, sqlite3.Error) as exc:  # e.g. a folder the user cannot write
                problem = str(exc)
        self._warn(f"plan-lsp: state is kept in memory only (not saved): {problem}")
        self.path = Path(MEMORY)
        return self._opened(open_state_db(self.path, self._key, self._warn))

    def _opened(self, opened: Opened) -> sqlite3.Connection:
        self._db_id = opened.db_id
        return opened.conn

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # -- seals -----------------------------------------------------------------------------

    def _seal(self, table: str, *fields: object) -> str:
        return row_seal(self._key, self._db_id, table, *fields)

    def _sealed(
        self, table: str, rows: Sequence[Sequence[Any]], unsealed: int = 0
    ) -> list[Sequence[Any]]:
        """The rows whose seal (their last field) matches the fields between the first
        `unsealed` (the row number) and it. The user hears once per table when some did
        not: nothing the server did not write is read back."""
        kept = [r for r in rows if same_seal(r[-1], self._seal(table, *r[unsealed:-1]))]
        if len(kept) < len(rows) and table not in self._skipped:
            self._skipped.add(table)
            skipped = len(rows) - len(kept)
            self._warn(
                f"plan-lsp: {skipped} row{'' if skipped == 1 else 's'} of {table} in "
                f"{self.path} {'was' if skipped == 1 else 'were'} not written by plan-lsp for "
                "this user and ignored."
            )
        return kept

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
            rows = self._conn.execute(
                "SELECT id, workspace, state, seal FROM sessions WHERE workspace = ? "
                "ORDER BY updated DESC",
                (workspace,),
            ).fetchall()
        for session_id, _workspace, state, _seal in self._sealed("sessions", rows):
            return str(session_id), json.loads(state)
        return None

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
                fields = (session_id, rev, *revision, now)
                conn.execute(
                    "INSERT INTO plan_revisions (session_id, rev, path, text, sha256, time, seal) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (*fields, self._seal("plan_revisions", *fields)),
                )
            text = json.dumps(state)
            conn.execute(
                "INSERT INTO sessions (id, workspace, state, updated, seal) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET state = excluded.state, "
                "updated = excluded.updated, seal = excluded.seal",
                (
                    session_id,
                    workspace,
                    text,
                    now,
                    self._seal("sessions", session_id, workspace, text),
                ),
            )
            if event is not None:
                kind, actor, data = event
                if rev is not None:
                    data = {**data, "rev": rev}
                self._insert_event(conn, session_id, now, kind, actor, data)
        return rev

    def _insert_event(
        self,
        conn: sqlite3.Connection,
        session_id: str,
        now: float,
        kind: str,
        actor: str,
        data: dict[str, Any],
    ) -> int:
        fields = (session_id, now, kind, actor, json.dumps(data))
        cur = conn.execute(
            "INSERT INTO events (session_id, time, kind, actor, data, seal) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (*fields, self._seal("events", *fields)),
        )
        assert cur.lastrowid is not None
        return cur.lastrowid

    def append_event(self, session_id: str, kind: str, actor: str, data: dict[str, Any]) -> int:
        with self._tx() as conn:
            return self._insert_event(conn, session_id, time.time(), kind, actor, data)

    def events(
        self, session_id: str, after: int = 0, kinds: tuple[str, ...] | None = None
    ) -> list[Event]:
        sql = "SELECT seq, session_id, time, kind, actor, data, seal FROM events "
        sql += "WHERE session_id = ? AND seq > ?"
        params: list[Any] = [session_id, after]
        if kinds:
            sql += f" AND kind IN ({','.join('?' * len(kinds))})"
            params.extend(kinds)
        sql += " ORDER BY seq"
        with self._lock:
            rows = self._conn.execute(sql, params).fetchall()
        return [
            Event(r[0], r[1], r[2], r[3], r[4], json.loads(r[5]))
            for r in self._sealed("events", rows, unsealed=1)
        ]

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
        fields = (session_id, run_id, conversation, json.dumps(message))
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO messages (session_id, run_id, conversation, message, seal) "
                "VALUES (?, ?, ?, ?, ?)",
                (*fields, self._seal("messages", *fields)),
            )

    def messages(self, session_id: str, conversation: str) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT session_id, run_id, conversation, message, seal FROM messages "
                "WHERE session_id = ? AND conversation = ? ORDER BY seq",
                (session_id, conversation),
            ).fetchall()
        return [json.loads(r[3]) for r in self._sealed("messages", rows)]

    def tool_output(self, session_id: str, tool_call_id: str) -> str | None:
        """The newest stored tool result of `tool_call_id` in any conversation of the
        session (what compaction pruned from the model's view), or None."""
        # The id is matched in Python: the connection's authorizer allows no SQL functions.
        needle = json.dumps(tool_call_id)
        with self._lock:
            rows = self._conn.execute(
                "SELECT session_id, run_id, conversation, message, seal FROM messages "
                "WHERE session_id = ? ORDER BY seq DESC",
                (session_id,),
            ).fetchall()
        for row in self._sealed("messages", [r for r in rows if needle in r[3]]):
            message = json.loads(row[3])
            if message.get("role") == "tool" and message.get("tool_call_id") == tool_call_id:
                content = message.get("content")
                return content if isinstance(content, str) else None
        return None

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
        run_id = payload.get("runId")
        fields = (
            session_id,
            conversation,
            run_id,
            str(payload.get("kind", "")),
            json.dumps(payload),
        )
        with self._tx() as conn:
            cursor = conn.execute(
                "INSERT INTO history (session_id, conversation, run_id, kind, payload, seal) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (*fields, self._seal("history", *fields)),
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
                "SELECT session_id, conversation, run_id, kind, payload, seal FROM ("
                "SELECT * FROM history WHERE session_id = ? AND conversation = ? "
                "ORDER BY seq DESC LIMIT ?) ORDER BY seq",
                (session_id, conversation, limit),
            ).fetchall()
        return [json.loads(r[4]) for r in self._sealed("history", rows)]

    def update_history(
        self, session_id: str, run_id: str, kind: str, changes: dict[str, Any]
    ) -> None:
        """Merge `changes` into the history entries of one run and kind (e.g. a failed prompt)."""
        with self._tx() as conn:
            rows = conn.execute(
                "SELECT seq, session_id, conversation, run_id, kind, payload, seal FROM history "
                "WHERE session_id = ? AND run_id = ? AND kind = ?",
                (session_id, run_id, kind),
            ).fetchall()
            for seq, *row in rows:
                if not same_seal(row[-1], self._seal("history", *row[:-1])):
                    continue  # not ours: never read, never re-sealed
                conversation, payload = row[1], row[4]
                merged = json.dumps({**json.loads(payload), **changes})
                seal = self._seal("history", session_id, conversation, run_id, kind, merged)
                conn.execute(
                    "UPDATE history SET payload = ?, seal = ? WHERE seq = ?", (merged, seal, seq)
                )

    # -- plan revisions --------------------------------------------------------------------

    def revisions(self, session_id: str) -> list[PlanRevision]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT session_id, rev, path, text, sha256, time, seal FROM plan_revisions "
                "WHERE session_id = ? ORDER BY rev",
                (session_id,),
            ).fetchall()
        return [PlanRevision(*r[1:6]) for r in self._sealed("plan_revisions", rows)]
