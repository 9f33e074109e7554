"""The vocabulary of every policy decision: the two mode axes (the wire contract's, which
imports nothing of ours), and who caused a change."""

from __future__ import annotations

from enum import StrEnum

from plan_lsp.protocol.state import PermissionMode, WorkMode

__all__ = ["Actor", "PermissionMode", "WorkMode"]


class Actor(StrEnum):
    """Who caused a state change; recorded with every event."""

    USER = "user"
    MODEL = "model"
    APPROVAL = "approval"
    RESTORE = "restore"
    SYSTEM = "system"
