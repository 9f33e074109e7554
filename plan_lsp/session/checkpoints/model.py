"""The values the checkpoint store answers with, and the errors it raises."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from plan_lsp.session.checkpoints.snapshot import CheckpointError

# Checkpoint kinds. The changes between a checkpoint and the next are the run's, except after
# an "after" (taken when a tool call ended), a "revert" or a "redo": what changes between that
# one and the next checkpoint was done by someone else (the user, another session).
BEFORE, AFTER, PRE_REVERT, REVERT, REDO = "before", "after", "pre-revert", "revert", "redo"
CLOSING = frozenset({AFTER, REVERT, REDO})


class UnknownCheckpoint(CheckpointError):
    """No checkpoint of that id in this store (never made, or pruned)."""


class ForeignCheckpoint(CheckpointError):
    """The id names a checkpoint of another store (another session)."""


@dataclass(frozen=True)
class FileChange:
    path: str
    status: str  # added | deleted | modified | mode | type
    added: int = 0
    removed: int = 0


@dataclass(frozen=True)
class Checkpoint:
    id: str
    seq: int
    at: float  # seconds since the epoch
    label: str
    step: int | None
    tool_call_id: str | None
    kind: str
    run: str
    files: tuple[FileChange, ...] = ()  # changed since the previous checkpoint
    skipped: tuple[tuple[str, str], ...] = ()  # (path, why) not recorded
    reverted_to: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {**vars(self), "files": [dict(vars(f)) for f in self.files]}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Checkpoint:
        files = tuple(FileChange(**f) for f in d["files"])
        return cls(**{**d, "files": files, "skipped": tuple(tuple(s) for s in d["skipped"])})


@dataclass(frozen=True)
class Kept:
    path: str
    why: str


@dataclass
class RevertResult:
    """What a revert (or redo) did: `restored` paths now hold the target's state (`merged`:
    restored by merging with the user's own changes), `kept` were left as they are, with
    why, `not_restorable` could not be brought back. Never restored by any revert: anything
    outside the workspace folder, effects on the network, processes started, `.git`."""

    target: str
    restored: list[str] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)
    kept: list[Kept] = field(default_factory=list)
    not_restorable: list[Kept] = field(default_factory=list)
    checkpoint: Checkpoint | None = None  # the state after it


@dataclass(frozen=True)
class PruneResult:
    removed: int  # checkpoints dropped
    freed_bytes: int
    kept_bytes: int
