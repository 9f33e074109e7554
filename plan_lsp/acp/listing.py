"""`session/list`: the conversations a folder's state keeps, as ACP session infos. Listing a
folder that has no state creates none. `session/fork` reads a conversation from it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from acp import schema

from plan_lsp.session.plans import clean_title
from plan_lsp.session.state_home import StateDirUnavailable, workspace_state_file
from plan_lsp.session.store import StateStore

# The most sessions `session/list` answers for one request.
LIST_SESSIONS_MAX = 200


def stored_sessions(root: Path) -> list[schema.SessionInfo]:
    """The folder `root`'s conversations (of every session kept for it), the sessions most
    recently changed first."""
    with _store(root) as store:
        if store is None:
            return []
        return [
            schema.SessionInfo(
                session_id=conversation,
                cwd=str(root),
                title=clean_title(prompt) or None if prompt is not None else None,
            )
            for owner in store.session_ids()
            for conversation, prompt in store.conversations(owner, LIST_SESSIONS_MAX)
        ][:LIST_SESSIONS_MAX]


def saved_session_of(root: Path, conversation: str) -> str | None:
    """The saved session that keeps the conversation `conversation` of the folder `root`
    (a session made over ACP keeps one of its own id), None when none does."""
    with _store(root) as store:
        if store is None:
            return None
        for owner in store.session_ids():
            if owner == conversation or store.history(owner, conversation, 1):
                return owner
    return None


def saved_conversation(
    root: Path, conversation: str, keep: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
    """The messages (what the model is given) and the newest `keep` updates (what the client
    was shown) of the conversation `conversation` of the folder `root`; None when unknown."""
    owner = saved_session_of(root, conversation)
    with _store(root) as store:
        if owner is None or store is None:
            return None
        return store.messages(owner, conversation), store.history(owner, conversation, keep)


@contextmanager
def _store(root: Path) -> Iterator[StateStore | None]:
    """The folder's state, when any is kept (opening it creates none)."""
    try:
        path = workspace_state_file(root)
    except StateDirUnavailable:
        path = None
    if path is None or not path.is_file() or not root.is_dir():
        yield None
        return
    store = StateStore(path)
    try:
        yield store
    finally:
        store.close()
