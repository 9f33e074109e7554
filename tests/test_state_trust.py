"""Session state in the user's state folder: where it lives, its permissions, a damaged
database set aside, and the one-time import of an earlier version's
`<workspace>/.plan-lsp/state.db` (only what plan-lsp sealed for this user; a hostile file is
ignored and never blocks start-up)."""

from __future__ import annotations

import json
import os
import re
import secrets
import sqlite3
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plan_lsp.policy.sandbox.layout import user_plan_lsp_dirs
from plan_lsp.session import Session, StateStore, legacy_state
from plan_lsp.session.legacy_state import SCHEMA_V2, _Key
from plan_lsp.session.state_home import state_root, workspace_key, workspace_state_file

Warnings = list[str]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def _db_of(state_dir: Path, ws: Path) -> Path:
    return state_dir / workspace_key(ws) / "state.db"


def _open(ws: Path) -> tuple[StateStore, Warnings]:
    warnings: Warnings = []
    return StateStore.for_workspace(ws, warn=warnings.append), warnings


def _tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


# -- where the state lives -------------------------------------------------------------------


def test_the_same_real_path_has_the_same_key_through_a_link(tmp_path: Path) -> None:
    real = tmp_path / "code" / "app"
    real.mkdir(parents=True)
    (tmp_path / "link").symlink_to(real)
    assert workspace_key(tmp_path / "link") == workspace_key(real)
    assert workspace_key(tmp_path / "code" / ".." / "code" / "app") == workspace_key(real)


def test_two_folders_of_the_same_name_have_different_keys(tmp_path: Path) -> None:
    a, b = tmp_path / "one" / "app", tmp_path / "two" / "app"
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    ka, kb = workspace_key(a), workspace_key(b)
    assert ka != kb
    assert ka.startswith("app-") and kb.startswith("app-")


@given(st.text(min_size=1, max_size=80).filter(lambda s: "/" not in s and "\x00" not in s))
def test_a_key_is_one_readable_safe_folder_name(name: str) -> None:
    key = workspace_key(Path("/nonexistent-root") / name)
    assert re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,39}-[0-9a-f]{16}|root-[0-9a-f]{16}", key)
    assert key not in (".", "..") and not key.startswith(".")


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"PLAN_LSP_STATE_DIR": "/s/own", "XDG_STATE_HOME": "/x", "HOME": "/h"}, "/s/own"),
        ({"XDG_STATE_HOME": "/x", "HOME": "/h"}, "/x/plan-lsp"),
        ({"HOME": "/h"}, "/h/.local/state/plan-lsp"),
        # Relative values are ignored, as the XDG specification asks.
        ({"PLAN_LSP_STATE_DIR": "r", "XDG_STATE_HOME": "r", "HOME": "/h"}, "/h/.local/state/plan-lsp"),  # noqa: E501
        ({"PLAN_LSP_STATE_DIR": "", "XDG_STATE_HOME": "/x", "HOME": "/h"}, "/x/plan-lsp"),
    ],
)  # fmt: skip
def test_the_state_root(env: dict[str, str], expected: str) -> None:
    assert state_root(env) == Path(expected)


def test_the_folders_are_private_and_the_database_too(ws: Path, state_dir: Path) -> None:
    old = os.umask(0)  # the modes must not depend on a permissive umask
    try:
        store, warnings = _open(ws)
        Session(store, ws, ws / ".plan-lsp" / "plans")
    finally:
        os.umask(old)
    db = _db_of(state_dir, ws)
    assert store.path == db and warnings == []
    assert stat.S_IMODE(state_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(db.parent.stat().st_mode) == 0o700
    for path in db.parent.iterdir():  # state.db and its -wal/-shm
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    store.close()


def test_nothing_is_written_into_the_workspace(ws: Path, state_dir: Path) -> None:
    store, _ = _open(ws)
    session = Session(store, ws, ws / ".plan-lsp" / "plans")
    session.store.append_event(session.id, "note", "user", {})
    store.close()
    assert _tree(ws) == []
    assert _db_of(state_dir, ws).is_file()


def test_a_session_is_found_again_through_a_link_to_its_folder(ws: Path, tmp_path: Path) -> None:
    store, _ = _open(ws)
    first = Session(store, ws, ws / ".plan-lsp" / "plans")
    store.close()
    (tmp_path / "alias").symlink_to(ws)
    again, _ = _open(tmp_path / "alias")
    assert Session(again, tmp_path / "alias", ws / ".plan-lsp" / "plans").id == first.id
    again.close()


def test_two_folders_of_the_same_name_do_not_share_a_session(tmp_path: Path) -> None:
    a, b = tmp_path / "one" / "app", tmp_path / "two" / "app"
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    sa, _ = _open(a)
    sb, _ = _open(b)
    assert Session(sa, a, a / "plans").id != Session(sb, b, b / "plans").id
    assert sa.path != sb.path


def test_a_state_folder_that_is_the_users_link_to_elsewhere_is_used(
    ws: Path, tmp_path: Path, state_dir: Path
) -> None:
    elsewhere = tmp_path / "synced" / "plan-lsp"
    elsewhere.mkdir(parents=True)
    state_dir.parent.mkdir(parents=True, exist_ok=True)
    state_dir.symlink_to(elsewhere)
    store, warnings = _open(ws)
    assert store.persistent and warnings == []
    assert (elsewhere / workspace_key(ws) / "state.db").is_file()
    store.close()


def test_two_servers_of_one_folder_share_its_database(ws: Path) -> None:
    first, _ = _open(ws)
    second, warnings = _open(ws)  # while the first is open (two editors on one folder)
    session = Session(first, ws, ws / "plans")
    assert Session(second, ws, ws / "plans").id == session.id
    assert warnings == [] and first.path == second.path
    first.close()
    second.close()


# -- a damaged or foreign database in the state folder ---------------------------------------


def _other_program(db: Path) -> None:
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE notes (x)")
    conn.commit()
    conn.close()


def _older_schema(db: Path) -> None:
    conn = sqlite3.connect(db)
    conn.executescript(SCHEMA_V2)
    conn.close()


@pytest.mark.parametrize(
    ("make", "tag"),
    [
        (lambda db: db.write_bytes(b"this is not a database" * 100), "corrupt"),
        (lambda db: db.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200), "corrupt"),
        (_other_program, "foreign"),
        (_older_schema, "foreign"),
    ],
)
def test_a_bad_database_is_set_aside_with_a_warning_and_a_new_one_made(
    ws: Path, state_dir: Path, make: Callable[[Path], None], tag: str
) -> None:
    db = _db_of(state_dir, ws)
    db.parent.mkdir(parents=True)
    make(db)
    before = db.read_bytes()
    store, warnings = _open(ws)
    session = Session(store, ws, ws / "plans")
    assert session.mode.value == "plan"
    aside = list(db.parent.glob(f"state.db.{tag}-*"))
    assert [p.read_bytes() for p in aside] == [before]
    assert len(warnings) == 1 and aside[0].name in warnings[0] and str(db) in warnings[0]
    assert store.path == db
    store.close()


def test_an_unusable_state_folder_keeps_state_in_memory(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("PLAN_LSP_STATE_DIR", str(tmp_path / "a-file" / "plan-lsp"))
    store, warnings = _open(ws)
    session = Session(store, ws, ws / "plans")
    assert not store.persistent and session.mode.value == "plan"
    assert len(warnings) == 1 and "in memory only" in warnings[0]
    assert "a-file" in warnings[0]


def test_a_damaged_session_row_is_skipped_with_a_warning(ws: Path, state_dir: Path) -> None:
    store, _ = _open(ws)
    Session(store, ws, ws / "plans")
    store.close()
    conn = sqlite3.connect(_db_of(state_dir, ws))
    conn.execute("UPDATE sessions SET state = '[not json'")
    conn.commit()
    conn.close()
    store, warnings = _open(ws)
    assert store.first_session(str(ws)) is None
    assert any("damaged" in w for w in warnings)


# -- importing an earlier version's database -------------------------------------------------


def _user_key(state_dir: Path) -> _Key:
    """The key the earlier version made in the user's state folder."""
    state_dir.mkdir(parents=True, exist_ok=True)
    secret = secrets.token_bytes(32)
    key_file = state_dir / "state-key"
    key_file.write_text(secret.hex() + "\n")
    key_file.chmod(0o600)
    return _Key(secret)


SESSION = {
    "mode": "build",
    "permissionMode": "strict",
    "planStatus": "approved",
    "planPath": "/p/PLAN.md",
    "approved": {"path": "/p/PLAN.md", "text": "# Plan\n", "sha256": "ab", "time": "t"},
    "todos": [{"content": "step", "status": "pending"}],
    "completedDo": False,
    "everPlanned": True,
    "task": "do it",
    "conversation": "main",
}


def _earlier_db(ws: Path, key: _Key, state: dict[str, object] | None = None) -> Path:
    """`<ws>/.plan-lsp/state.db` as the earlier version wrote it: sealed identity and rows."""
    db = ws / ".plan-lsp" / "state.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db)
    conn.executescript(SCHEMA_V2)
    db_id = secrets.token_hex(16)
    conn.executemany(
        "INSERT INTO meta VALUES (?, ?)",
        [("schema", "2"), ("id", db_id), ("seal", key.seal("db", db_id, "2"))],
    )

    def seal(table: str, *fields: object) -> str:
        return key.seal(db_id, table, *fields)

    text = json.dumps(state or SESSION)
    conn.execute(
        "INSERT INTO sessions VALUES (?, ?, ?, ?, ?)",
        ("s1", str(ws), text, 100.0, seal("sessions", "s1", str(ws), text)),
    )
    event = ("s1", 1.0, "mode_changed", "user", json.dumps({"mode": "build"}))
    conn.execute(
        "INSERT INTO events (session_id, time, kind, actor, data, seal) VALUES (?,?,?,?,?,?)",
        (*event, seal("events", *event)),
    )
    message = ("s1", "r1", "main", json.dumps({"role": "user", "content": "hi"}))
    conn.execute(
        "INSERT INTO messages (session_id, run_id, conversation, message, seal) VALUES (?,?,?,?,?)",
        (*message, seal("messages", *message)),
    )
    entry = ("s1", "main", "r1", "prompt", json.dumps({"kind": "prompt", "text": "hi"}))
    conn.execute(
        "INSERT INTO history (session_id, conversation, run_id, kind, payload, seal) "
        "VALUES (?,?,?,?,?,?)",
        (*entry, seal("history", *entry)),
    )
    revision = ("s1", 1, "/p/PLAN.md", "# Plan\n", "ab", 2.0)
    conn.execute(
        "INSERT INTO plan_revisions VALUES (?,?,?,?,?,?,?)",
        (*revision, seal("plan_revisions", *revision)),
    )
    conn.commit()
    conn.close()
    return db


def test_an_earlier_database_is_imported_once_and_removed(ws: Path, state_dir: Path) -> None:
    old = _earlier_db(ws, _user_key(state_dir))
    Path(f"{old}-shm").write_bytes(b"")
    store, warnings = _open(ws)
    assert warnings == []
    restored = store.first_session(str(ws))
    assert restored == ("s1", SESSION)
    assert [e.kind for e in store.events("s1")] == ["mode_changed"]
    assert store.messages("s1", "main") == [{"role": "user", "content": "hi"}]
    assert store.history("s1", "main", 10) == [{"kind": "prompt", "text": "hi"}]
    assert [(r.rev, r.text) for r in store.revisions("s1")] == [(1, "# Plan\n")]
    assert _tree(ws) == [".plan-lsp"]  # the old file and its companions are gone
    session = Session(store, ws, ws / "plans")
    assert (session.id, session.mode.value, session.permission_mode.value) == (
        "s1",
        "build",
        "strict",
    )
    store.close()
    # No trace of the import is left in the state folder.
    assert sorted(p.name for p in state_dir.iterdir()) == [workspace_key(ws), "state-key"]


def test_an_import_never_replaces_a_session_already_kept(ws: Path, state_dir: Path) -> None:
    key = _user_key(state_dir)
    _earlier_db(ws, key)
    store, _ = _open(ws)
    store.save("s1", str(ws), {"mode": "plan"})
    store.close()
    _earlier_db(ws, key)  # an older copy comes back (a checkout, a restored backup)
    store, _ = _open(ws)
    assert store.first_session(str(ws)) == ("s1", {"mode": "plan"})
    assert len(store.events("s1")) == 1  # not doubled


def _forged_rows(ws: Path, state_dir: Path) -> None:
    """A genuine database, and a session with a foreign seal added to it."""
    db = _earlier_db(ws, _user_key(state_dir))
    conn = sqlite3.connect(db)
    conn.execute(
        "INSERT INTO sessions VALUES ('s2', ?, ?, 200.0, 'f00d')",
        (str(ws), json.dumps({**SESSION, "permissionMode": "yolo"})),
    )
    conn.commit()
    conn.close()


def test_rows_not_sealed_for_this_user_are_not_imported(ws: Path, state_dir: Path) -> None:
    _forged_rows(ws, state_dir)
    store, warnings = _open(ws)
    assert store.first_session(str(ws)) == ("s1", SESSION)
    assert len(warnings) == 1 and "1 of sessions" in warnings[0]


def test_a_sealed_state_the_session_cannot_read_is_not_imported(ws: Path, state_dir: Path) -> None:
    _earlier_db(ws, _user_key(state_dir), {**SESSION, "mode": "superuser"})
    store, warnings = _open(ws)
    assert store.first_session(str(ws)) is None
    assert store.events("s1") == []
    assert "1 of sessions" in warnings[0] and "1 of events" in warnings[0]


def _unsealed(ws: Path, state_dir: Path) -> None:
    """What a repository ships: the earlier schema, a session in build/yolo, no seals."""
    _user_key(state_dir)
    db = ws / ".plan-lsp" / "state.db"
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)
    conn.executescript(SCHEMA_V2)
    conn.execute("INSERT INTO meta VALUES ('schema', '2'), ('id', 'x'), ('seal', 'y')")
    conn.execute(
        "INSERT INTO sessions (id, workspace, state, updated) VALUES ('r', ?, ?, 9e9)",
        (str(ws), json.dumps({**SESSION, "permissionMode": "yolo"})),
    )
    conn.commit()
    conn.close()


def _another_users_key(ws: Path, state_dir: Path) -> None:
    _earlier_db(ws, _Key(secrets.token_bytes(32)))
    _user_key(state_dir)


def _no_key(ws: Path, state_dir: Path) -> None:
    _earlier_db(ws, _user_key(state_dir))
    (state_dir / "state-key").unlink()


def _readable_key(ws: Path, state_dir: Path) -> None:
    _earlier_db(ws, _user_key(state_dir))
    (state_dir / "state-key").chmod(0o644)


def _with(sql: str) -> Callable[[Path, Path], None]:
    def make(ws: Path, state_dir: Path) -> None:
        db = _earlier_db(ws, _user_key(state_dir))
        conn = sqlite3.connect(db)
        conn.executescript(sql)
        conn.close()

    return make


def _link(ws: Path, state_dir: Path) -> None:
    _earlier_db(ws / "src", _user_key(state_dir))
    (ws / ".plan-lsp").mkdir()
    (ws / ".plan-lsp" / "state.db").symlink_to(ws / "src" / ".plan-lsp" / "state.db")


def _fifo(ws: Path, state_dir: Path) -> None:
    _user_key(state_dir)
    (ws / ".plan-lsp").mkdir()
    os.mkfifo(ws / ".plan-lsp" / "state.db")


def _huge(ws: Path, state_dir: Path) -> None:
    _earlier_db(ws, _user_key(state_dir))
    with (ws / ".plan-lsp" / "state.db").open("ab") as out:
        out.truncate(legacy_state.MAX_BYTES + 1)  # sparse: no disk used


def _garbage(ws: Path, state_dir: Path) -> None:
    _user_key(state_dir)
    (ws / ".plan-lsp").mkdir()
    (ws / ".plan-lsp" / "state.db").write_bytes(b"SQLite format 3\x00" + b"\x07" * 4000)


def _newer_schema(ws: Path, state_dir: Path) -> None:
    _user_key(state_dir)
    db = ws / ".plan-lsp" / "state.db"
    db.parent.mkdir()
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE sessions (id, state)")
    conn.close()


HOSTILE: dict[str, Callable[[Path, Path], None]] = {
    "unsealed (shipped by the repository)": _unsealed,
    "sealed with another user's key": _another_users_key,
    "no key to check it with": _no_key,
    "a key others can read": _readable_key,
    "a trigger": _with("CREATE TRIGGER t AFTER INSERT ON events BEGIN DELETE FROM sessions; END;"),
    "a view": _with("CREATE VIEW v AS SELECT * FROM sessions;"),
    "another table": _with("CREATE TABLE extra (x);"),
    "a symbolic link": _link,
    "a FIFO": _fifo,
    "over the size limit": _huge,
    "not a database": _garbage,
    "another schema": _newer_schema,
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_earlier_database_is_ignored_with_a_warning(
    ws: Path, state_dir: Path, name: str
) -> None:
    HOSTILE[name](ws, state_dir)
    old = ws / ".plan-lsp" / "state.db"
    kind = os.lstat(old).st_mode
    store, warnings = _open(ws)
    session = Session(store, ws, ws / "plans")
    # A new session, in the defaults: nothing of the file was used.
    assert (session.mode.value, session.permission_mode.value, session.approved) == (
        "plan",
        "ask",
        None,
    )
    assert len(warnings) == 1 and "ignored" in warnings[0] and str(old) in warnings[0]
    # Left where it was, as it was; and not reported again while it stays the same file.
    assert os.lstat(old).st_mode == kind
    store.close()
    _again, again = _open(ws)
    assert again == []


def test_an_earlier_database_that_cannot_be_removed_is_reported_once(
    ws: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = _earlier_db(ws, _user_key(state_dir))

    unlink = os.unlink

    def refuse(path: str | Path, **kwargs: object) -> None:
        if Path(path) == old:
            raise PermissionError(13, "Permission denied")
        unlink(path, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "unlink", refuse)
    store, warnings = _open(ws)
    assert store.first_session(str(ws)) == ("s1", SESSION)
    assert len(warnings) == 1 and "could not be removed" in warnings[0]
    assert "Permission denied" in warnings[0] and old.exists()
    store.close()
    store, warnings = _open(ws)
    assert warnings == [] and len(store.events("s1")) == 1


def test_the_new_location_is_the_one_the_server_uses(ws: Path, state_dir: Path) -> None:
    assert workspace_state_file(ws) == _db_of(state_dir, ws)


def test_a_state_folder_named_on_its_own_is_one_of_the_users_folders() -> None:
    """The sandbox hides the user's plan-lsp folders in plan mode and keeps them read-only in
    build mode: a state folder `PLAN_LSP_STATE_DIR` names is one of them."""
    found = user_plan_lsp_dirs({"PLAN_LSP_STATE_DIR": "/srv/state", "HOME": "/h"})
    assert "/srv/state" in found and "/h/.local/state/plan-lsp" in found
    assert "rel" not in user_plan_lsp_dirs({"PLAN_LSP_STATE_DIR": "rel", "HOME": "/h"})
