"""`session/list`: the conversations a folder's state keeps, as ACP session infos. Listing a
folder that has no state creates none."""

from __future__ import annotations

from pathlib import Path

from acp import schema

from plan_lsp.session.plans import clean_title
from plan_lsp.session.state_home import StateDirUnavailable, workspace_state_file
from plan_lsp.session.store import StateStore

# The most sessions `session/list` answers for one request.
LIST_SESSIONS_MAX = 200


def stored_sessions(
    root: Path, open_store: tuple[StateStore, str] | None
) -> list[schema.SessionInfo]:
    """The folder `root`'s conversations, newest first. `open_store`: the store and session
    id of the folder when a session is open on it in this process."""
    if open_store is not None:
        return _session_infos(*open_store, root)
    try:
        path = workspace_state_file(root)
    except StateDirUnavailable:
        return []
    if not path.is_file() or not root.is_dir():
        return []  # nothing kept for this folder: listing creates no state
    store = StateStore(path)
    try:
        first = store.first_session(str(root))
        return _session_infos(store, first[0], root) if first is not None else []
    finally:
        store.close()


def _session_infos(store: StateStore, owner: str, root: Path) -> list[schema.SessionInfo]:
    return [
        schema.SessionInfo(
            session_id=conversation,
            cwd=str(root),
            title=clean_title(prompt) or None if prompt is not None else None,
        )
        for conversation, prompt in store.conversations(owner, LIST_SESSIONS_MAX)
    ]
