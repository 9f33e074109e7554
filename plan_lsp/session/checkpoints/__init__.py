"""Checkpoints of a workspace during a Do run: record, list, diff, revert, redo, prune
(docs/checkpoints.md). Knows nothing of LSP, ACP or the session core."""

from plan_lsp.session.checkpoints.model import (
    AFTER,
    BEFORE,
    Checkpoint,
    FileChange,
    ForeignCheckpoint,
    Kept,
    PruneResult,
    RevertResult,
    UnknownCheckpoint,
)
from plan_lsp.session.checkpoints.snapshot import CheckpointError, CorruptStore, StoreUnavailable
from plan_lsp.session.checkpoints.store import DEFAULT_MAX_FILE_BYTES, CheckpointStore

__all__ = [
    "AFTER",
    "BEFORE",
    "DEFAULT_MAX_FILE_BYTES",
    "Checkpoint",
    "CheckpointError",
    "CheckpointStore",
    "CorruptStore",
    "FileChange",
    "ForeignCheckpoint",
    "Kept",
    "PruneResult",
    "RevertResult",
    "StoreUnavailable",
    "UnknownCheckpoint",
]
