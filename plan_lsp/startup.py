"""The garbage collector while the server starts.

Importing the server makes ~60,000 long-lived objects; default thresholds run ~150
collections over the growing heap (~85 ms of ~800 ms, measured with `gc.callbacks`).
`begin()` raises the first threshold (5,000) while starting; `settle()` freezes the start-up
heap (`gc.freeze()`, as CPython documents for servers) and restores the thresholds.
"""

from __future__ import annotations

import gc

START_THRESHOLDS = (5000, 50, 1000)

_saved: list[tuple[int, int, int]] = []


def begin() -> None:
    """First thing `plan-lsp serve` does."""
    if not _saved:
        _saved.append(gc.get_threshold())
        gc.set_threshold(*START_THRESHOLDS)


def settle() -> None:
    """Start-up is over (idempotent)."""
    if _saved:
        gc.freeze()
        gc.set_threshold(*_saved.pop())
