"""Value types of one session: modes, plan status, todos, the approved-plan record.

They are the wire contract's (`plan_lsp/protocol/state.py`): `SessionState` is what clients
are sent; `Actor` (who caused a change) is recorded with every event but never sent.
"""

from __future__ import annotations

from plan_lsp.policy.modes import Actor
from plan_lsp.protocol.state import (
    ApprovedPlan,
    McpServerStatus,
    Outcome,
    PermissionMode,
    PlanStatus,
    ProviderInfo,
    SessionContext,
    SessionState,
    SessionUsage,
    Todo,
    TodoStatus,
    WorkMode,
)

__all__ = [
    "Actor",
    "ApprovedPlan",
    "McpServerStatus",
    "Outcome",
    "PermissionMode",
    "PlanStatus",
    "ProviderInfo",
    "SessionContext",
    "SessionState",
    "SessionUsage",
    "Todo",
    "TodoStatus",
    "WorkMode",
]
