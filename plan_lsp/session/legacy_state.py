"""Importing the state an earlier plan-lsp kept in the workspace, once.

Earlier versions kept a workspace's sessions in `<workspace>/.plan-lsp/state.db`, a file a
repository can ship. On start-up that file, if there is one, is read as untrusted input:

- only a regular file (never through a link, never a FIFO) of at most `MAX_BYTES`, with its
  `-wal` if that is a regular file too, copied into a private folder of the user's state
  folder and opened there read-only (`mode=ro`) with `trusted_schema` off; only `SELECT`s
  of the tables the earlier version wrote run on it;
- its schema must be exactly the earlier version's (a trigger, view or any other object
  means it is not plan-lsp's), `quick_check` must pass;
- the earlier version sealed the database's identity and every row with the user's key
  (`$XDG_STATE_HOME/plan-lsp/state-key`, never in a workspace): the identity must carry
  this user's seal, and a row whose seal does not match is not imported. So a database a
  repository ships (a session in build mode with an "approved" plan) is never taken;
- every imported session state is validated as the session would read it, every event,
  message and history entry must be a JSON object.

What passes is written into the user's database in one transaction (a session already
there is kept), and the old file and its `-wal`/`-shm` are removed. A file that does not
pass is ignored with a warning naming why, left where it is, and not reported again while it
stays the same file; a file that cannot be removed is reported once, and its sessions are not
imported twice. Nothing here stops the server from starting.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import os
import shutil
import sqlite3
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from plan_lsp.session.model import ApprovedPlan, PermissionMode, PlanStatus, Todo, WorkMode
from plan_lsp.session.state_db import check_header, schema_problem

log = logging.getLogger(__name__)

LEGACY_PATH = (".plan-lsp", "state.db")
KEY_FILE = "state-key"
# The largest earlier database imported (a bigger file is ignored with a warning).
MAX_BYTES = 256 * 1024 * 1024
_KEY_BYTES = 32
_VERSION = "2"
_IGNORED = "legacy-ignored"
_IMPORTED = "legacy-imported"

# The earlier version's schema, exactly (what its `sqlite_master` must equal).
SCHEMA_V2 = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    workspace TEXT NOT NULL,
    state TEXT NOT NULL,
    updated REAL NOT NULL,
    seal TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    time REAL NOT NULL,
    kind TEXT NOT NULL,
    actor TEXT NOT NULL,
    data TEXT NOT NULL,
    seal TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS events_by_session ON events (session_id, seq);
CREATE TABLE IF NOT EXISTS messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    conversation TEXT NOT NULL,
    message TEXT NOT NULL,
    seal TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS messages_by_conv ON messages (session_id, conversation, seq);
CREATE TABLE IF NOT EXISTS history (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    conversation TEXT NOT NULL,
    run_id TEXT,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    seal TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS history_by_conv ON history (session_id, conversation, seq);
CREATE TABLE IF NOT EXISTS plan_revisions (
    session_id TEXT NOT NULL,
    rev INTEGER NOT NULL,
    path TEXT NOT NULL,
    text TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    time REAL NOT NULL,
    seal TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (session_id, rev)
);
"""


class Ignored(Exception):
    """An earlier database that is not imported; the message says why."""


@dataclass
class LegacyState:
    """What is imported from an earlier database: rows in the current schema's columns."""

    # (id, workspace, state, updated)
    sessions: list[tuple[str, str, str, float]] = field(default_factory=list)
    # (session_id, time, kind, actor, data)
    events: list[tuple[str, float, str, str, str]] = field(default_factory=list)
    # (session_id, run_id, conversation, message)
    messages: list[tuple[str, str, str, str]] = field(default_factory=list)
    # (session_id, conversation, run_id, kind, payload)
    history: list[tuple[str, str, str | None, str, str]] = field(default_factory=list)
    # (session_id, rev, path, text, sha256, time)
    revisions: list[tuple[str, int, str, str, str, float]] = field(default_factory=list)
    # Rows left out (seal or content wrong), per table.
    skipped: dict[str, int] = field(default_factory=dict)


class Store(Protocol):
    """What the import needs of `store.StateStore`."""

    path: Path

    @property
    def persistent(self) -> bool: ...

    def meta(self, key: str) -> str | None: ...

    def set_meta(self, key: str, value: str) -> None: ...

    def import_legacy(self, found: LegacyState) -> int: ...


# -- the earlier key -----------------------------------------------------------------------


class _Key:
    def __init__(self, secret: bytes) -> None:
        self._secret = secret

    def seal(self, *fields: object) -> str:
        message = json.dumps(fields, ensure_ascii=False, separators=(",", ":"))
        return hmac.new(self._secret, message.encode("utf-8"), hashlib.sha256).hexdigest()

    def matches(self, found: object, *fields: object) -> bool:
        return isinstance(found, str) and hmac.compare_digest(found, self.seal(*fields))


def read_legacy_key(state_dir: Path) -> _Key:
    """The user's key that sealed earlier databases (`<state_dir>/state-key`): a private
    regular file of this user, read without following a link; Ignored if there is none."""
    path = state_dir / KEY_FILE
    try:
        data, st = _read_bounded(path, 4 * _KEY_BYTES)
    except FileNotFoundError:
        raise Ignored(
            f"the key that sealed it ({path}) is missing, so it cannot be told from one a "
            "repository shipped"
        ) from None
    except OSError as exc:
        raise Ignored(f"the key that sealed it cannot be read: {exc}") from None
    if (hasattr(os, "geteuid") and st.st_uid != os.geteuid()) or stat.S_IMODE(st.st_mode) & 0o077:
        raise Ignored(f"the key that sealed it ({path}) is not private to this user")
    try:
        secret = bytes.fromhex(data.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        secret = b""
    if len(secret) != _KEY_BYTES:
        raise Ignored(f"the key that sealed it ({path}) is damaged")
    return _Key(secret)


# -- reading -------------------------------------------------------------------------------


def _read_bounded(path: Path, limit: int) -> tuple[bytes, os.stat_result]:
    """The bytes of the regular file `path` (not through a link, never blocking on a FIFO);
    OSError when it is something else or holds more than `limit` bytes."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{path.name} is not a regular file")
        if st.st_size > limit:
            raise OSError(f"{path.name} holds {st.st_size:,} bytes (at most {limit:,} are read)")
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, 1 << 20):
            size += len(chunk)
            if size > limit:
                raise OSError(f"{path.name} holds more than {limit:,} bytes")
            chunks.append(chunk)
        return b"".join(chunks), st
    finally:
        os.close(fd)


def fingerprint(st: os.stat_result) -> str:
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"


def _copy(old: Path, folder: Path) -> Path:
    """Copy the earlier database (and its `-wal`, if a regular file) into `folder`."""
    copy = folder / "state.db"
    try:
        data, _st = _read_bounded(old, MAX_BYTES)
    except OSError as exc:
        raise Ignored(str(exc)) from None
    copy.write_bytes(data)
    with contextlib.suppress(OSError):  # a missing or odd -wal is not read
        wal, _ = _read_bounded(Path(f"{old}-wal"), MAX_BYTES)
        Path(f"{copy}-wal").write_bytes(wal)
    return copy


def _state_ok(text: object) -> bool:
    """Whether `text` is a session state the session can restore (as `Session._load`)."""
    try:
        data = json.loads(text) if isinstance(text, str) else None
        if not isinstance(data, dict):
            return False
        WorkMode(data.get("mode", "plan"))
        PermissionMode(data.get("permissionMode", "ask"))
        PlanStatus(data.get("planStatus", "none"))
        if data.get("approved"):
            ApprovedPlan.model_validate(data["approved"])
        todos = data.get("todos", [])
        if not isinstance(todos, list):
            return False
        for todo in todos:
            Todo.model_validate(todo)
        return all(
            data.get(name) is None or isinstance(data.get(name), str)
            for name in ("planPath", "task", "conversation")
        )
    except ValueError:
        return False


def _json_object(text: object) -> bool:
    try:
        return isinstance(text, str) and isinstance(json.loads(text), dict)
    except ValueError:
        return False


def read_legacy_db(copy: Path, key: _Key) -> LegacyState:
    """The sealed, valid rows of the earlier database at `copy` (a private copy)."""
    check_header(copy)
    conn = sqlite3.connect(f"file:{copy}?mode=ro", uri=True, isolation_level=None)
    try:
        conn.execute("PRAGMA trusted_schema=OFF")
        conn.execute("PRAGMA query_only=ON")
        conn.execute("PRAGMA cell_size_check=ON")
        conn.execute("PRAGMA mmap_size=0")
        problem = schema_problem(conn, SCHEMA_V2)
        if problem is not None:
            raise Ignored(problem)
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        db_id = meta.get("id")
        if meta.get("schema") != _VERSION or not isinstance(db_id, str):
            raise Ignored("it is not a database of the earlier version")
        if not key.matches(meta.get("seal"), "db", db_id, _VERSION):
            raise Ignored("it was not written by plan-lsp for this user")
        check = conn.execute("PRAGMA quick_check").fetchone()
        if check is None or check[0] != "ok":
            raise Ignored(f"it is damaged ({check})")
        return _rows(conn, key, db_id)
    finally:
        conn.close()


def _rows(conn: sqlite3.Connection, key: _Key, db_id: str) -> LegacyState:
    found = LegacyState()

    def kept(table: str, fields: tuple[Any, ...], seal: object, valid: bool) -> bool:
        if valid and key.matches(seal, db_id, table, *fields):
            return True
        found.skipped[table] = found.skipped.get(table, 0) + 1
        return False

    for sid, ws, state, updated, seal in conn.execute(
        "SELECT id, workspace, state, updated, seal FROM sessions"
    ):
        if kept("sessions", (sid, ws, state), seal, _state_ok(state) and isinstance(sid, str)):
            found.sessions.append((sid, str(ws), state, float(updated)))
    ids = {s[0] for s in found.sessions}
    for sid, when, kind, actor, data, seal in conn.execute(
        "SELECT session_id, time, kind, actor, data, seal FROM events ORDER BY seq"
    ):
        valid = sid in ids and isinstance(when, (int, float)) and _json_object(data)
        if kept("events", (sid, when, kind, actor, data), seal, valid):
            found.events.append((sid, float(when), str(kind), str(actor), data))
    for sid, run, conv, message, seal in conn.execute(
        "SELECT session_id, run_id, conversation, message, seal FROM messages ORDER BY seq"
    ):
        if kept("messages", (sid, run, conv, message), seal, sid in ids and _json_object(message)):
            found.messages.append((sid, str(run), str(conv), message))
    for sid, conv, run, kind, payload, seal in conn.execute(
        "SELECT session_id, conversation, run_id, kind, payload, seal FROM history ORDER BY seq"
    ):
        valid = sid in ids and _json_object(payload) and (run is None or isinstance(run, str))
        if kept("history", (sid, conv, run, kind, payload), seal, valid):
            found.history.append((sid, str(conv), run, str(kind), payload))
    for sid, rev, path, text, sha, when, seal in conn.execute(
        "SELECT session_id, rev, path, text, sha256, time, seal FROM plan_revisions"
    ):
        valid = (
            sid in ids
            and isinstance(rev, int)
            and all(isinstance(v, str) for v in (path, text, sha))
            and isinstance(when, (int, float))
        )
        if kept("plan_revisions", (sid, rev, path, text, sha, when), seal, valid):
            found.revisions.append((sid, rev, path, text, sha, float(when)))
    return found


# -- importing -----------------------------------------------------------------------------


def import_legacy_state(
    root: Path, store: Store, warn: Callable[[str], None], state_dir: Path
) -> None:
    """Import `<root>/.plan-lsp/state.db` into `store` once, then remove it (see the module's
    docstring). Never raises."""
    old = root.joinpath(*LEGACY_PATH)
    try:
        st = os.lstat(old)
    except OSError:
        return  # the usual case: nothing to import
    try:
        _import(old, st, store, warn, state_dir)
    except Exception as exc:  # an earlier file never stops the server
        log.exception("importing %s failed", old)
        warn(f"plan-lsp: the earlier state database {old} was not imported ({exc}).")


def _import(
    old: Path,
    st: os.stat_result,
    store: Store,
    warn: Callable[[str], None],
    state_dir: Path,
) -> None:
    mark = fingerprint(st)
    if store.meta(_IGNORED) == mark:
        log.info("%s: ignored before, unchanged", old)
        return
    if store.meta(_IMPORTED) == mark:
        log.info("%s: imported before; it could not be removed", old)
        return
    if not store.persistent:
        return  # nowhere to keep it: left for a start-up that can
    try:
        if stat.S_ISLNK(st.st_mode):
            raise Ignored("it is a symbolic link")
        if not stat.S_ISREG(st.st_mode):
            raise Ignored("it is not a regular file")
        if st.st_size > MAX_BYTES:
            raise Ignored(f"it holds {st.st_size:,} bytes (at most {MAX_BYTES:,} are imported)")
        key = read_legacy_key(state_dir)
        folder = Path(tempfile.mkdtemp(prefix=".import-", dir=state_dir))
        try:
            found = read_legacy_db(_copy(old, folder), key)
        except sqlite3.Error as exc:
            raise Ignored(f"it cannot be read: {exc}") from None
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    except Ignored as exc:
        store.set_meta(_IGNORED, mark)
        warn(
            f"plan-lsp: the state database {old} (from an earlier plan-lsp, or shipped with "
            f"the repository) was ignored: {exc}. Nothing in it was used; remove it when you "
            "like (it is not reported again)."
        )
        return
    imported = store.import_legacy(found)
    if found.skipped:
        said = ", ".join(f"{n} of {table}" for table, n in sorted(found.skipped.items()))
        warn(
            f"plan-lsp: rows of {old} not written by plan-lsp for this user, or damaged, were "
            f"not imported: {said}."
        )
    log.info("imported %d session(s) from %s into %s", imported, old, store.path)
    removed = _remove(old, st)
    if removed is not None:
        store.set_meta(_IMPORTED, mark)
        warn(
            f"plan-lsp: the sessions of {old} were moved to {store.path}, but the old file "
            f"could not be removed ({removed}); it is no longer read, remove it yourself."
        )


def _remove(old: Path, st: os.stat_result) -> str | None:
    """Remove the earlier database and its `-wal`/`-shm` if it is still the file read; why
    not, or None."""
    try:
        now = os.lstat(old)
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            return "it was replaced while it was read"
        os.unlink(old)
    except FileNotFoundError:
        pass
    except OSError as exc:
        return exc.strerror or str(exc)
    for suffix in ("-wal", "-shm"):
        with contextlib.suppress(OSError):
            companion = Path(f"{old}{suffix}")
            if stat.S_ISREG(os.lstat(companion).st_mode):
                os.unlink(companion)
    return None
