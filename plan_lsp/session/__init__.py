"""Session state: modes, plan status, todos, approved plan; persisted in SQLite in the
user's state folder (`state_home.py`), never in the workspace."""

from plan_lsp.policy.modes import Actor
from plan_lsp.protocol.state import (
    ApprovedPlan,
    Outcome,
    PermissionMode,
    PlanStatus,
    SessionState,
    SessionUsage,
    Todo,
    WorkMode,
)
from plan_lsp.session.session import Session, TransitionRefused, sha256_text
from plan_lsp.session.store import StateStore

__all__ = [
    "Actor",
    "ApprovedPlan",
    "Outcome",
    "PermissionMode",
    "PlanStatus",
    "Session",
    "SessionState",
    "SessionUsage",
    "StateStore",
    "Todo",
    "TransitionRefused",
    "WorkMode",
    "sha256_text",
]
