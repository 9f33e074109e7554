"""Session state in the user's state folder: where it lives, its permissions, a damaged
database set aside, the session bound to its folder, and a `<workspace>/.plan-lsp/state.db`
never read."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plan_lsp.policy.sandbox.layout import user_plan_lsp_dirs
from plan_lsp.protocol.state import PermissionMode, PlanStatus, WorkMode
from plan_lsp.session import Actor, Session, StateStore
from plan_lsp.session.state_db import SCHEMA, SCHEMA_VERSION
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
    conn.executescript(SCHEMA)
    conn.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION - 1),))
    conn.commit()
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


# -- the folder a session belongs to -----------------------------------------------------------


def _approved_in(ws: Path) -> str:
    store, _ = _open(ws)
    session = Session(store, ws, ws / "plans")
    session.approve(ws / "plans" / "PLAN.md", "# Plan\n1. Go.\n", PermissionMode.YOLO, Actor.USER)
    store.close()
    return session.id


def test_a_folder_made_again_at_its_path_starts_a_new_session(ws: Path, state_dir: Path) -> None:
    first = _approved_in(ws)
    # Deleted and made again, with the same files: ext4 gives it the same inode number.
    shutil.rmtree(ws)
    ws.mkdir()
    store, warnings = _open(ws)
    session = Session(store, ws, ws / "plans")
    assert session.id != first and (session.mode, session.permission_mode) == (
        WorkMode.PLAN,
        PermissionMode.ASK,
    )
    assert session.approved is None and session.plan_status is PlanStatus.NONE
    assert len(warnings) == 1 and "new session" in warnings[0] and "plan mode" in warnings[0]
    aside = list(_db_of(state_dir, ws).parent.glob("state.db.other-folder-*"))
    assert len(aside) == 1 and aside[0].name in warnings[0]
    store.close()
    # Said once: the new session is this folder's from now on.
    store, warnings = _open(ws)
    assert Session(store, ws, ws / "plans").id == session.id and warnings == []
    store.close()


def test_the_same_folder_restores_its_session(ws: Path, tmp_path: Path) -> None:
    first = _approved_in(ws)
    (ws / "new-file").write_text("x")  # changing the folder's content changes nothing
    for path in (ws, tmp_path / "link"):
        if path != ws:
            path.symlink_to(ws)
        store, warnings = _open(path)
        session = Session(store, path, ws / "plans")
        assert (session.id, session.mode, session.permission_mode) == (
            first,
            WorkMode.BUILD,
            PermissionMode.YOLO,
        )
        assert session.approved is not None and warnings == []
        store.close()


# -- a state database in the workspace -------------------------------------------------------


def _in_the_workspace(ws: Path, other: Path) -> Path:
    """What a repository ships: `.plan-lsp/state.db` in this server's own format, saved for
    another folder and for this one, in build mode, `yolo`, with an approved plan."""
    plan = {"path": "/p/PLAN.md", "text": "# Plan\n", "sha256": "ab", "time": "t"}
    state = {"mode": "build", "permissionMode": "yolo", "planStatus": "approved"}
    db = ws / ".plan-lsp" / "state.db"
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)
    conn.executescript(SCHEMA)
    conn.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
    for n, folder in enumerate((other, ws)):
        text = json.dumps({**state, "planPath": plan["path"], "approved": plan})
        conn.execute("INSERT INTO sessions VALUES (?, ?, ?, 9e9)", (f"s{n}", str(folder), text))
    conn.commit()
    conn.close()
    return db


def test_a_state_database_in_the_workspace_is_never_read(
    ws: Path, tmp_path: Path, state_dir: Path
) -> None:
    db = _in_the_workspace(ws, tmp_path / "elsewhere")
    before = _tree(ws), db.read_bytes()
    store, warnings = _open(ws)
    session = Session(store, ws, ws / "plans")
    assert (session.mode.value, session.permission_mode.value, session.approved) == (
        "plan",
        "ask",
        None,
    )
    assert warnings == [] and (_tree(ws), db.read_bytes()) == before
    store.close()


def test_the_new_location_is_the_one_the_server_uses(ws: Path, state_dir: Path) -> None:
    assert workspace_state_file(ws) == _db_of(state_dir, ws)


def test_a_state_folder_named_on_its_own_is_one_of_the_users_folders() -> None:
    """The sandbox hides the user's plan-lsp folders in plan mode and keeps them read-only in
    build mode: a state folder `PLAN_LSP_STATE_DIR` names is one of them."""
    found = user_plan_lsp_dirs({"PLAN_LSP_STATE_DIR": "/srv/state", "HOME": "/h"})
    assert "/srv/state" in found and "/h/.local/state/plan-lsp" in found
    assert "rel" not in user_plan_lsp_dirs({"PLAN_LSP_STATE_DIR": "rel", "HOME": "/h"})
