"""Opening a workspace's state database (docs/architecture.md, "State"): a new one is made
private (0600, no link followed) with schema and version in one transaction; an existing one
must have our header, exactly our schema and version and pass `quick_check`, else it is set
aside (`state.db.corrupt-<time>` or `.foreign-<time>`), the user told, a new one made.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path

SCHEMA_VERSION = 3

SCHEMA = """
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

MEMORY = ":memory:"
FILE_MODE = 0o600
# The companions SQLite keeps next to a database.
COMPANIONS = ("-wal", "-shm", "-journal")
_HEADER_BYTES = 100
_MAGIC = b"SQLite format 3\x00"


class Foreign(Exception):
    """A database that is not this server's (the message says why)."""


def check_header(path: Path) -> None:
    """Refuse a file SQLite should not open as the server's database: `sqlite3.DatabaseError`
    when it is no SQLite database at all, `Foreign` when it is one in a form the server never
    writes (a codec's reserved bytes, another text encoding) or not a regular file. Read
    without following a link, never blocking. An empty file passes."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Foreign("it is not a regular file")
        data = os.pread(fd, _HEADER_BYTES, 0)
    finally:
        os.close(fd)
    if not data:
        return
    if len(data) < _HEADER_BYTES or not data.startswith(_MAGIC):
        raise sqlite3.DatabaseError("file is not a database")
    page_size = int.from_bytes(data[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or page_size & (page_size - 1):
        raise sqlite3.DatabaseError(f"its page size ({page_size}) is invalid")
    if data[20] != 0:
        raise Foreign(f"it reserves {data[20]} bytes per page (an extension's format)")
    if data[18] not in (1, 2) or data[19] not in (1, 2):
        raise Foreign("it is in a file format this server does not write")
    if int.from_bytes(data[56:60], "big") not in (0, 1):
        raise Foreign("its text is not UTF-8")


SchemaRows = frozenset[tuple[str, str, str, str | None]]


@cache
def expected_schema(script: str) -> SchemaRows:
    """`sqlite_master` as `script` makes it: (type, name, table, sql) rows."""
    conn = sqlite3.connect(MEMORY)
    try:
        conn.executescript(script)
        return schema_rows(conn)
    finally:
        conn.close()


def schema_rows(conn: sqlite3.Connection) -> SchemaRows:
    rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    return frozenset(
        (str(t), str(n), str(tb), None if s is None else str(s)) for t, n, tb, s in rows
    )


def schema_problem(conn: sqlite3.Connection, script: str) -> str | None:
    """Why the database's schema is not exactly what `script` makes, or None."""
    found = schema_rows(conn)
    expected = expected_schema(script)
    if found == expected:
        return None
    extra = sorted(f"{t} {n}" for t, n, _tb, _s in found - expected)
    missing = sorted(f"{t} {n}" for t, n, _tb, _s in expected - found)
    said = []
    if extra:
        said.append(f"it holds {', '.join(extra[:5])}{' ...' if len(extra) > 5 else ''}")
    if missing:
        said.append(f"it lacks {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}")
    return " and ".join(said) + ", which the server does not create"


def open_state_db(path: Path, warn: Callable[[str], None]) -> sqlite3.Connection:
    """A connection to the state database at `path` (see the module's docstring); `warn`
    hears of every database set aside. Raises OSError when the folder is unusable."""
    if str(path) == MEMORY:
        conn = sqlite3.connect(MEMORY, check_same_thread=False, isolation_level=None)
        conn.executescript(SCHEMA + _VERSION_ROW)
        return conn
    for _attempt in range(3):
        created = _create_file(path)
        try:
            return _connect(path, created)
        except Foreign as exc:
            aside = move_aside(path, "foreign")
            warn(
                f"plan-lsp: {path} is not a state database of this plan-lsp ({exc}); "
                f"nothing in it was used. It was moved to {aside.name} and a new session "
                "was started."
            )
        except sqlite3.DatabaseError as exc:
            aside = move_aside(path, "corrupt")
            warn(
                f"plan-lsp: the state database {path} could not be read ({exc}); "
                f"it was moved to {aside.name} and a new session was started."
            )
    raise OSError(f"no state database could be made at {path}")


def _create_file(path: Path) -> bool:
    """Make `path` as an empty private file unless something is there; whether it made it."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, FILE_MODE)
    except FileExistsError:
        return False
    os.close(fd)
    return True


def _connect(path: Path, created: bool) -> sqlite3.Connection:
    check_header(path)
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    try:
        conn.execute("PRAGMA trusted_schema=0")
        if created or not schema_rows(conn):
            # WAL first, then one transaction; idempotent if another server made it too.
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.executescript(f"BEGIN IMMEDIATE;\n{SCHEMA}{_VERSION_ROW}COMMIT;")
        problem = schema_problem(conn, SCHEMA)
        if problem is not None:
            raise Foreign(problem)
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if row is None or row[0] != str(SCHEMA_VERSION):
            raise Foreign(f"its schema version is {row[0] if row else 'missing'}")
        check = conn.execute("PRAGMA quick_check").fetchone()
        if check is None or check[0] != "ok":
            raise sqlite3.DatabaseError(f"integrity check failed: {check}")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
    except BaseException:
        conn.close()
        raise
    return conn


_VERSION_ROW = f"INSERT OR IGNORE INTO meta (key, value) VALUES ('schema', '{SCHEMA_VERSION}');\n"


def move_aside(path: Path, tag: str) -> Path:
    """Rename the database and its companions to `<name>.<tag>-<time>...`; the new name."""
    stamp = int(time.time())
    aside = path.with_name(f"{path.name}.{tag}-{stamp}")
    number = 1
    while any(os.path.lexists(f"{aside}{suffix}") for suffix in ("", *COMPANIONS)):
        number += 1
        aside = path.with_name(f"{path.name}.{tag}-{stamp}-{number}")
    for suffix in ("", *COMPANIONS):
        with contextlib.suppress(FileNotFoundError):
            os.replace(f"{path}{suffix}", f"{aside}{suffix}")
    return aside
