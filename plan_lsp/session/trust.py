"""Which state the server trusts: only what it wrote itself, for this user.

A workspace's `.plan-lsp/state.db` is a file in the repository's folder: a repository can
ship one (git tracks it like any file), and with it a session in build mode, `yolo`, an
"approved" plan, or SQLite triggers and views that run inside the server's own statements.
So nothing in that file is taken on trust:

- **The user's key.** A secret of 32 random bytes, made once in the user's state folder
  (`$XDG_STATE_HOME/plan-lsp/state-key`, else platformdirs' user state folder), mode 0600,
  never in a workspace. It is what proves "this server, for this user, wrote that".
- **Seals.** Every row the server writes carries a seal: an HMAC-SHA256 under the key of the
  database's identity, the table and the row's fields. The database's identity (a random id
  in `meta`) is sealed when the server creates the database. A database whose identity is
  not sealed with this user's key is not one this server created: it is moved aside with a
  warning naming why, and a new one is made. A row whose seal does not match (a WAL file
  shipped next to a trusted database can rewrite any page) is never read back.
- **The schema is data.** Before anything else, on a connection that may not write
  (`PRAGMA query_only`), runs no function the schema names unless SQLite deems it
  innocuous (`PRAGMA trusted_schema=OFF`) and has `authorizer` installed, `sqlite_master`
  must be exactly what `state_db.SCHEMA` creates: a trigger, view, virtual table, index or
  table of any other kind means the file is not the server's. `authorizer` then refuses,
  for the whole life of the connection, any statement a trigger or view would run, any
  table but ours, and every pragma and function the store does not use — a second wall
  behind the schema check.
- **The file header** is checked before SQLite opens the file: the magic string, a valid
  page size, no reserved bytes per page (used by codecs and checksum extensions), UTF-8.

Opening, creating and moving aside live in `state_db.py`; the seals of each table in
`store.py`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import sqlite3
import stat
from collections.abc import Mapping
from functools import cache
from pathlib import Path

from plan_lsp.policy.safe_fs import read_file_bytes

KEY_FILE = "state-key"
_KEY_BYTES = 32
_HEADER_BYTES = 100
_MAGIC = b"SQLite format 3\x00"

# Tables the store reads and writes; SQLite's own bookkeeping tables are read too.
TABLES = frozenset({"meta", "sessions", "events", "messages", "history", "plan_revisions"})
_READABLE = TABLES | {"sqlite_master", "sqlite_schema", "sqlite_sequence"}
# The pragmas the store runs once the authorizer is installed (those set before it, like
# trusted_schema, can then no longer be changed), and the SQL functions it calls.
_PRAGMAS = frozenset({"journal_mode", "synchronous", "quick_check", "query_only"})
_FUNCTIONS = frozenset({"coalesce", "max"})
_STATEMENTS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_TRANSACTION})
_ROW_ACTIONS = frozenset(
    {sqlite3.SQLITE_READ, sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE}
)


class Untrusted(Exception):
    """A state database (or a part of it) the server did not write; the message says why."""


class KeyUnavailable(OSError):
    """The user's key cannot be read or made; the message says where and why."""


# -- the user's key --------------------------------------------------------------------------


def user_state_dir(environ: Mapping[str, str] | None = None) -> Path:
    """`$XDG_STATE_HOME/plan-lsp`, else the platform's user state folder for plan-lsp."""
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_STATE_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "plan-lsp"
    from platformdirs import user_state_path

    return user_state_path("plan-lsp", appauthor=False)


class StateKey:
    """The secret that seals what the server writes."""

    def __init__(self, secret: bytes) -> None:
        if len(secret) != _KEY_BYTES:
            raise ValueError(f"a state key is {_KEY_BYTES} bytes")
        self._secret = secret

    @classmethod
    def ephemeral(cls) -> StateKey:
        """A key for state kept in memory only (nothing outlives the process)."""
        return cls(secrets.token_bytes(_KEY_BYTES))

    def seal(self, *fields: object) -> str:
        message = json.dumps(fields, ensure_ascii=False, separators=(",", ":"))
        return hmac.new(self._secret, message.encode("utf-8"), hashlib.sha256).hexdigest()


def same_seal(found: object, expected: str) -> bool:
    """Whether a stored seal is the expected one (compared in constant time)."""
    return isinstance(found, str) and hmac.compare_digest(found, expected)


def _read_key(path: Path) -> bytes | None:
    """The key in `path`, None if there is none; KeyUnavailable if the file is not a
    private regular file of this user holding one."""
    try:
        data = read_file_bytes(path, max_bytes=4 * _KEY_BYTES)
        if data is None:
            return None
        st = os.stat(path, follow_symlinks=False)
    except OSError as exc:
        raise KeyUnavailable(f"the state key {path} cannot be read: {exc}") from None
    if st.st_uid != os.geteuid() or stat.S_IMODE(st.st_mode) & 0o077:
        raise KeyUnavailable(
            f"the state key {path} is not private to this user (owner {st.st_uid}, mode "
            f"{stat.S_IMODE(st.st_mode):o}); remove it and a new one is made"
        )
    try:
        secret = bytes.fromhex(data.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        secret = b""
    if len(secret) != _KEY_BYTES:
        raise KeyUnavailable(f"the state key {path} is damaged; remove it and a new one is made")
    return secret


def load_user_key(directory: Path | None = None) -> StateKey:
    """The user's key from `directory` (default `user_state_dir()`), made on first use.

    Made atomically: written to a private temporary file and linked to its name, so two
    servers starting at once end up with the same key. Raises KeyUnavailable."""
    folder = directory if directory is not None else user_state_dir()
    path = folder / KEY_FILE
    secret = _read_key(path)
    if secret is not None:
        return StateKey(secret)
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        temp = folder / f".{KEY_FILE}-{secrets.token_hex(8)}"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="ascii") as out:
                out.write(secrets.token_bytes(_KEY_BYTES).hex() + "\n")
                out.flush()
                os.fsync(out.fileno())
            try:
                os.link(temp, path, follow_symlinks=False)
            except FileExistsError:
                pass  # another server made it first: theirs is read below
        finally:
            temp.unlink(missing_ok=True)
    except OSError as exc:
        raise KeyUnavailable(f"the state key cannot be made in {folder}: {exc}") from None
    secret = _read_key(path)
    if secret is None:
        raise KeyUnavailable(f"the state key {path} vanished while it was made")
    return StateKey(secret)


# -- the file and its schema -----------------------------------------------------------------


def check_header(path: Path) -> None:
    """Refuse a file SQLite should not even open: `sqlite3.DatabaseError` when it is not an
    SQLite database at all, `Untrusted` when it is one in a form the server never writes.
    Read without following a link, never blocking. An empty file passes (SQLite makes it a
    database; the schema check then finds it empty)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Untrusted("it is not a regular file")
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
        raise Untrusted(f"its page size ({page_size}) is invalid")
    if data[20] != 0:
        raise Untrusted(f"it reserves {data[20]} bytes per page (an extension's format)")
    if data[18] not in (1, 2) or data[19] not in (1, 2):
        raise Untrusted("it is in a file format this server does not write")
    if int.from_bytes(data[56:60], "big") not in (0, 1):
        raise Untrusted("its text is not UTF-8")


@cache
def expected_schema(script: str) -> frozenset[tuple[str, str, str, str | None]]:
    """`sqlite_master` as `script` makes it: (type, name, table, sql) rows."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.executescript(script)
        return _schema_rows(conn)
    finally:
        conn.close()


def _schema_rows(conn: sqlite3.Connection) -> frozenset[tuple[str, str, str, str | None]]:
    rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    return frozenset(
        (str(t), str(n), str(tb), None if s is None else str(s)) for t, n, tb, s in rows
    )


def schema_problem(conn: sqlite3.Connection, script: str) -> str | None:
    """Why the database's schema is not exactly what `script` makes, or None."""
    found = _schema_rows(conn)
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


def authorizer(
    action: int, arg1: str | None, arg2: str | None, _db: str | None, source: str | None
) -> int:
    """SQLite's authorizer for the state connection: deny by default."""
    if source is not None:
        return sqlite3.SQLITE_DENY  # a statement inside a trigger or a view
    if action in _STATEMENTS:
        return sqlite3.SQLITE_OK
    if action in _ROW_ACTIONS:
        table = (arg1 or "").lower()
        if table in TABLES or (action == sqlite3.SQLITE_READ and table in _READABLE):
            return sqlite3.SQLITE_OK
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_PRAGMA:
        return sqlite3.SQLITE_OK if (arg1 or "").lower() in _PRAGMAS else sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION:
        return sqlite3.SQLITE_OK if (arg2 or "").lower() in _FUNCTIONS else sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_DENY
