"""SQLite persistence of sessions, their event log, conversations and plan revisions, in the
user's state folder (`state_home.py`, docs/architecture.md). The event log is append-only;
the current state is a row per session rewritten in the same transaction as the event that
changed it, so a SIGKILL can never leave state and log disagreeing.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plan_lsp.session.state_db import MEMORY, move_aside, open_state_db
from plan_lsp.session.state_home import (
    StateDirUnavailable,
    folder_identity,
    workspace_state_file,
)

log = logging.getLogger(__name__)

# The `meta` key holding the identity of the folder the database belongs to.
FOLDER_KEY = "folder"


def _json_object(text: object) -> dict[str, Any] | None:
    """`text` parsed when it is a JSON object, else None."""
    if not isinstance(text, str):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


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
    """Thread-safe access to one workspace's state database (in memory where it cannot be
    saved: the user is told)."""

    def __init__(self, path: Path, warn: Callable[[str], None] | None = None) -> None:
        self.path = path
        self._warn = warn or (lambda msg: log.warning("%s", msg))
        self._lock = threading.RLock()
        self._conn = self._open()

    @classmethod
    def for_workspace(
        cls,
        root: Path,
        warn: Callable[[str], None] | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> StateStore:
        """The store of the workspace folder `root`, in the user's state folder."""
        say = warn or (lambda msg: log.warning("%s", msg))
        try:
            path = workspace_state_file(root, environ)
        except StateDirUnavailable as exc:
            say(f"plan-lsp: state is kept in memory only (not saved): {exc}")
            path = Path(MEMORY)
        store = cls(path, warn=say)
        store._bind(root)
        return store

    def _bind(self, root: Path) -> None:
        """Keep this database for the folder `root` only: its identity (`folder_identity`)
        is recorded at first use; a database saved for another folder at this path (one
        deleted and made again, a clone in place of the original) is set aside, the user is
        told, and a new one is started, so nothing of that folder's session is restored."""
        identity = folder_identity(root)
        saved = self.meta(FOLDER_KEY)
        if identity is None or saved == identity or not self.persistent:
            return
        if saved is not None:
            self.close()
            aside = move_aside(self.path, "other-folder")
            self._warn(
                f"plan-lsp: {root} is not the folder its saved session belongs to (it was "
                "deleted or replaced and made again at this path): a new session starts, in "
                "plan mode with nothing approved. The earlier state was moved to "
                f"{aside.name} in {aside.parent}."
            )
            self._conn = self._open()
        self.set_meta(FOLDER_KEY, identity)

    # -- opening ---------------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        try:
            if str(self.path) != MEMORY:
                self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            return open_state_db(self.path, self._warn)
        except (OSError, sqlite3.Error) as exc:  # e.g. a folder the user cannot write
            problem = str(exc)
        self._warn(f"plan-lsp: state is kept in memory only (not saved): {problem}")
        self.path = Path(MEMORY)
        return open_state_db(self.path, self._warn)

    @property
    def persistent(self) -> bool:
        """Whether the state is saved (not kept in memory only)."""
        return str(self.path) != MEMORY

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # -- bookkeeping -----------------------------------------------------------------------

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def meta(self, key: str) -> str | None:
        rows = self._rows("SELECT value FROM meta WHERE key = ?", (key,))
        return str(rows[0][0]) if rows else None

    def set_meta(self, key: str, value: str) -> None:
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

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
        """The session to resume: the newest of `workspace` (as the folder was named when it
        was saved), else the newest in the database (which is this folder's alone: the same
        folder reached through another path). A row whose state is not a JSON object is
        skipped with a warning."""
        rows = self._rows(
            "SELECT id, state FROM sessions ORDER BY (workspace = ?) DESC, updated DESC",
            (workspace,),
        )
        for session_id, state in rows:
            data = _json_object(state)
            if data is not None:
                return str(session_id), data
            self._warn(
                f"plan-lsp: the saved state of session {session_id} in {self.path} is "
                "damaged and was not restored."
            )
        return None

    def session(self, session_id: str) -> dict[str, Any] | None:
        """The saved state of session `session_id` (None: no such row, or a damaged one)."""
        rows = self._rows("SELECT state FROM sessions WHERE id = ?", (session_id,))
        return _json_object(rows[0][0]) if rows else None

    def session_ids(self) -> list[str]:
        """Every saved session's id, the most recently changed first."""
        rows = self._rows("SELECT id FROM sessions ORDER BY updated DESC")
        return [str(r[0]) for r in rows]

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
                "INSERT INTO sessions (id, workspace, state, updated) "
                "VALUES (?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET state = excluded.state, "
                "updated = excluded.updated",
                (session_id, workspace, json.dumps(state), now),
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
        cur = conn.execute(
            "INSERT INTO events (session_id, time, kind, actor, data) VALUES (?, ?, ?, ?, ?)",
            (session_id, now, kind, actor, json.dumps(data)),
        )
        assert cur.lastrowid is not None
        return cur.lastrowid

    def append_event(self, session_id: str, kind: str, actor: str, data: dict[str, Any]) -> int:
        with self._tx() as conn:
            return self._insert_event(conn, session_id, time.time(), kind, actor, data)

    def events(
        self, session_id: str, after: int = 0, kinds: tuple[str, ...] | None = None
    ) -> list[Event]:
        sql = "SELECT seq, session_id, time, kind, actor, data FROM events "
        sql += "WHERE session_id = ? AND seq > ?"
        params: list[Any] = [session_id, after]
        if kinds:
            sql += f" AND kind IN ({','.join('?' * len(kinds))})"
            params.extend(kinds)
        rows = self._rows(sql + " ORDER BY seq", params)
        return [Event(r[0], r[1], r[2], r[3], r[4], json.loads(r[5])) for r in rows]

    def last_event_seq(self, session_id: str) -> int:
        rows = self._rows(
            "SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id = ?", (session_id,)
        )
        return int(rows[0][0])

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
        rows = self._rows(
            "SELECT message FROM messages WHERE session_id = ? AND conversation = ? ORDER BY seq",
            (session_id, conversation),
        )
        return [json.loads(r[0]) for r in rows]

    def tool_output(self, session_id: str, tool_call_id: str) -> str | None:
        """The newest stored tool result of `tool_call_id` in any conversation of the
        session (what compaction pruned from the model's view), or None."""
        needle = json.dumps(tool_call_id)
        rows = self._rows(
            "SELECT message FROM messages WHERE session_id = ? AND instr(message, ?) > 0 "
            "ORDER BY seq DESC",
            (session_id, needle),
        )
        for (text,) in rows:
            message = json.loads(text)
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
        kind = str(payload.get("kind", ""))
        with self._tx() as conn:
            cursor = conn.execute(
                "INSERT INTO history (session_id, conversation, run_id, kind, payload) "
                "VALUES (?, ?, ?, ?, ?)",
                (session_id, conversation, run_id, kind, json.dumps(payload)),
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
        rows = self._rows(
            "SELECT payload FROM ("
            "SELECT * FROM history WHERE session_id = ? AND conversation = ? "
            "ORDER BY seq DESC LIMIT ?) ORDER BY seq",
            (session_id, conversation, limit),
        )
        return [json.loads(r[0]) for r in rows]

    def conversations(self, session_id: str, limit: int) -> list[tuple[str, str | None]]:
        """The session's conversations with a history, newest activity first, each with the
        text of its first prompt still kept (None when trimmed away)."""
        rows = self._rows(
            "SELECT conversation, MAX(seq) AS last, "
            "(SELECT payload FROM history AS p WHERE p.session_id = h.session_id "
            "AND p.conversation = h.conversation AND p.kind = 'prompt' ORDER BY p.seq "
            "LIMIT 1) FROM history AS h WHERE session_id = ? GROUP BY conversation "
            "ORDER BY last DESC LIMIT ?",
            (session_id, limit),
        )
        found: list[tuple[str, str | None]] = []
        for conversation, _last, prompt in rows:
            text = (_json_object(prompt) or {}).get("text") if prompt else None
            found.append((str(conversation), text if isinstance(text, str) else None))
        return found

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
                merged = json.dumps({**json.loads(payload), **changes})
                conn.execute("UPDATE history SET payload = ? WHERE seq = ?", (merged, seq))

    # -- plan revisions --------------------------------------------------------------------

    def workspace_events(self, kinds: tuple[str, ...]) -> list[Event]:
        """The events of these kinds of every session of the workspace, oldest first."""
        rows = self._rows(
            "SELECT seq, session_id, time, kind, actor, data FROM events "
            f"WHERE kind IN ({','.join('?' * len(kinds))}) ORDER BY seq",
            kinds,
        )
        parsed = [(r, _json_object(r[5])) for r in rows]
        return [Event(r[0], r[1], r[2], r[3], r[4], data) for r, data in parsed if data is not None]

    def revision_index(self) -> list[tuple[str, int, str, float]]:
        """`(session id, revision, path, time)` of every plan revision of the workspace
        (every session's), oldest first; without the texts."""
        rows = self._rows(
            "SELECT session_id, rev, path, time FROM plan_revisions ORDER BY time, rev"
        )
        return [(str(r[0]), int(r[1]), str(r[2]), float(r[3])) for r in rows]

    def revisions(self, session_id: str) -> list[PlanRevision]:
        rows = self._rows(
            "SELECT rev, path, text, sha256, time FROM plan_revisions WHERE session_id = ? "
            "ORDER BY rev",
            (session_id,),
        )
        return [PlanRevision(*r) for r in rows]
