"""Who caused a change, the vocabulary of every policy decision beside the two mode axes
(`WorkMode`, `PermissionMode`: the wire contract's, `plan_lsp/protocol/state.py`)."""

from __future__ import annotations

from enum import StrEnum


class Actor(StrEnum):
    """Who caused a state change; recorded with every event."""

    USER = "user"
    MODEL = "model"
    APPROVAL = "approval"
    RESTORE = "restore"
    SYSTEM = "system"
