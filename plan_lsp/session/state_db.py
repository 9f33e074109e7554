"""Opening a workspace's state database: only one this server created for this user.

`open_state_db` returns a connection to `<workspace>/.plan-lsp/state.db` after checking, in
this order, with nothing of the file executed or written before the checks pass:

1. A rollback journal (`state.db-journal`) is moved aside: the server's database is in WAL
   mode from birth and never has one, and SQLite would play a "hot" journal back into the
   database on the first read — pages of the repository's choosing.
2. No database: any `-wal`/`-shm` left without one is moved aside (SQLite would replay that
   WAL into the new file), and a new database is made at a private temporary name —
   schema, sealed identity, WAL mode — then linked to its name in one step, so a database
   under that name is always whole and always carries its identity in the main file.
3. The header (`trust.check_header`), then on a connection that may not write
   (`query_only`), with `trusted_schema` off and the deny-by-default authorizer installed:
   `sqlite_master` equals the server's schema, the identity in `meta` is sealed with this
   user's key, `quick_check` passes, and every session row is sealed too.

A database that fails is closed and moved aside (`state.db.foreign-<time>` when it is not
the server's, `state.db.corrupt-<time>` when it cannot be read, with its `-wal`/`-shm`),
the user is told why, and a new one is made. Nothing from it is used. A journal or WAL file
set aside on its own keeps its suffix (`state.db.foreign-<time>-journal`).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from plan_lsp.session.trust import (
    StateKey,
    Untrusted,
    authorizer,
    check_header,
    same_seal,
    schema_problem,
)

SCHEMA_VERSION = 2

# Every table but `meta` has a `seal` (see store.py): rows without a valid one are never
# read back. The default only serves files written by other programs; the server always
# writes a seal.
SCHEMA = """
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

MEMORY = ":memory:"
# The companions SQLite keeps next to a database.
COMPANIONS = ("-wal", "-shm", "-journal")


@dataclass(frozen=True)
class Opened:
    conn: sqlite3.Connection
    # The database's identity: part of every seal, so rows cannot move between databases.
    db_id: str


def identity_seal(key: StateKey, db_id: str) -> str:
    return key.seal("db", db_id, str(SCHEMA_VERSION))


def row_seal(key: StateKey, db_id: str, table: str, *fields: object) -> str:
    """The seal of one row of `table` in the database `db_id` (its columns but `seq`)."""
    return key.seal(db_id, table, *fields)


def open_state_db(path: Path, key: StateKey, warn: Callable[[str], None]) -> Opened:
    """A trusted connection to the state database at `path` (see the module's docstring);
    `warn` hears of everything moved aside. Raises OSError when the folder is unusable."""
    if str(path) == MEMORY:
        return _fresh(sqlite3.connect(MEMORY, check_same_thread=False, isolation_level=None), key)
    _set_aside_journal(path, warn)
    for _attempt in range(3):
        if not os.path.lexists(path):
            _set_aside_orphans(path, warn)
            _create(path, key)
        try:
            return _connect_trusted(path, key)
        except Untrusted as exc:
            aside = _move_aside(path, "foreign")
            warn(
                f"plan-lsp: the state database {path} was not created by plan-lsp for this "
                f"user ({exc}); nothing in it was used. It was moved to {aside.name} and a "
                "new session was started (a database from an older plan-lsp is moved aside "
                "once, too)."
            )
        except sqlite3.DatabaseError as exc:
            aside = _move_aside(path, "corrupt")
            warn(
                f"plan-lsp: the state database {path} could not be read ({exc}); "
                f"it was moved to {aside.name} and a fresh one was started."
            )
    raise OSError(f"no trusted state database could be made at {path}")


def _connect_trusted(path: Path, key: StateKey) -> Opened:
    check_header(path)
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    try:
        # Before any statement reads the schema: no writes, no untrusted functions, and
        # the authorizer refuses whatever the schema could make a statement run.
        conn.execute("PRAGMA query_only=1")
        conn.execute("PRAGMA trusted_schema=0")
        conn.execute("PRAGMA cell_size_check=1")
        conn.execute("PRAGMA mmap_size=0")
        conn.set_authorizer(authorizer)
        problem = schema_problem(conn, SCHEMA)
        if problem is not None:
            raise Untrusted(problem)
        # The identity first: a foreign file is refused without a scan of its pages.
        db_id = _check_identity(conn, key)
        row = conn.execute("PRAGMA quick_check").fetchone()
        if row is None or row[0] != "ok":
            raise sqlite3.DatabaseError(f"integrity check failed: {row}")
        _check_sessions(conn, key, db_id)
        conn.execute("PRAGMA query_only=0")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
    except BaseException:
        conn.close()
        raise
    return Opened(conn, db_id)


def _check_identity(conn: sqlite3.Connection, key: StateKey) -> str:
    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    db_id = meta.get("id")
    if meta.get("schema") != str(SCHEMA_VERSION) or not isinstance(db_id, str):
        raise Untrusted("it carries no identity of this version's")
    if not same_seal(meta.get("seal"), identity_seal(key, db_id)):
        raise Untrusted("its identity is not sealed with this user's key")
    return db_id


def _check_sessions(conn: sqlite3.Connection, key: StateKey, db_id: str) -> None:
    rows = conn.execute("SELECT id, workspace, state, seal FROM sessions").fetchall()
    for session_id, workspace, state, seal in rows:
        expected = row_seal(key, db_id, "sessions", session_id, workspace, state)
        if not same_seal(seal, expected):
            raise Untrusted(f"the state of session {session_id} was not written by plan-lsp")


def _fresh(conn: sqlite3.Connection, key: StateKey) -> Opened:
    """Give the new, empty database `conn` the schema and a sealed identity."""
    db_id = secrets.token_hex(16)
    # One transaction: one durable commit instead of one per statement (~20 → ~4 ms here).
    conn.executescript("BEGIN;\n" + SCHEMA)
    conn.executemany(
        "INSERT INTO meta (key, value) VALUES (?, ?)",
        [("schema", str(SCHEMA_VERSION)), ("id", db_id), ("seal", identity_seal(key, db_id))],
    )
    conn.execute("COMMIT")
    conn.set_authorizer(authorizer)
    return Opened(conn, db_id)


def _create(path: Path, key: StateKey) -> None:
    """Make a new database at `path`: complete at a private name, then linked into place
    (if another server made one meanwhile, theirs is kept and checked like any other)."""
    temp = path.with_name(f"{path.name}-new-{secrets.token_hex(8)}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    os.close(os.open(temp, flags, 0o666))
    try:
        conn = sqlite3.connect(temp, isolation_level=None)
        try:
            conn.execute("PRAGMA synchronous=FULL")
            _fresh(conn, key)
            conn.set_authorizer(None)
            # Written in rollback mode, so all of it is in the main file; WAL from now on.
            conn.execute("PRAGMA journal_mode=WAL")
        finally:
            conn.close()
        with contextlib.suppress(FileExistsError):
            os.link(temp, path, follow_symlinks=False)
        _fsync_folder(path.parent)
    finally:
        for suffix in ("", *COMPANIONS):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{temp}{suffix}")


def _fsync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _aside_name(path: Path, tag: str) -> Path:
    stamp = int(time.time())
    aside = path.with_name(f"{path.name}.{tag}-{stamp}")
    number = 1
    while any(os.path.lexists(f"{aside}{suffix}") for suffix in ("", *COMPANIONS)):
        number += 1
        aside = path.with_name(f"{path.name}.{tag}-{stamp}-{number}")
    return aside


def _move_aside(path: Path, tag: str, suffixes: tuple[str, ...] = ("", *COMPANIONS)) -> Path:
    """Rename the database and its companions to `<name>.<tag>-<time>...`; the new name."""
    aside = _aside_name(path, tag)
    for suffix in suffixes:
        with contextlib.suppress(FileNotFoundError):
            os.replace(f"{path}{suffix}", f"{aside}{suffix}")
    return aside


def _set_aside_journal(path: Path, warn: Callable[[str], None]) -> None:
    journal = Path(f"{path}-journal")
    if os.path.lexists(journal):
        aside = _move_aside(path, "foreign", ("-journal",))
        warn(
            f"plan-lsp: {journal.name} is a rollback journal, which plan-lsp never writes "
            f"(SQLite would play it back into the state database); it was moved to "
            f"{aside.name}-journal."
        )


def _set_aside_orphans(path: Path, warn: Callable[[str], None]) -> None:
    orphans = [s for s in ("-wal", "-shm") if os.path.lexists(f"{path}{s}")]
    if orphans:
        aside = _move_aside(path, "foreign", tuple(orphans))
        names = " and ".join(f"{path.name}{s}" for s in orphans)
        warn(
            f"plan-lsp: {names} lay next to no state database (SQLite would replay them into "
            f"a new one); moved to {aside.name}{orphans[0]}."
        )
