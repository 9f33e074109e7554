"""The vocabulary of every policy decision: the two mode axes, and who caused a change.

Defined here, in the lowest deciding layer, so policy and tools can speak it without
importing the session that stores it.
"""

from __future__ import annotations

from enum import StrEnum


class WorkMode(StrEnum):
    PLAN = "plan"
    BUILD = "build"


class PermissionMode(StrEnum):
    ASK = "ask"
    AUTO_EDIT = "auto_edit"
    YOLO = "yolo"
    STRICT = "strict"


class Actor(StrEnum):
    """Who caused a state change; recorded with every event."""

    USER = "user"
    MODEL = "model"
    APPROVAL = "approval"
    RESTORE = "restore"
    SYSTEM = "system"
