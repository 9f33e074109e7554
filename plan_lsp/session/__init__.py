"""Session state: modes, plan status, todos, approved plan; persisted in SQLite in the
user's state folder (`state_home.py`), never in the workspace."""

from plan_lsp.policy.modes import Actor
from plan_lsp.session.session import Session, TransitionRefused, sha256_text
from plan_lsp.session.store import StateStore

__all__ = [
    "Actor",
    "Session",
    "StateStore",
    "TransitionRefused",
    "sha256_text",
]
