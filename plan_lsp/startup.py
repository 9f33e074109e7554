"""The garbage collector while the server starts.

Importing the server creates some 60,000 objects that live as long as it does (lsprotocol's
classes alone are most of them). With CPython's default thresholds the collector runs ~150
times during those imports and walks the growing heap again and again: ~85 ms of a start-up
of ~800 ms on the reference machine (measured with `gc.callbacks`). `begin()` raises the
first threshold while the server starts (one collection every 5,000 allocations instead of
700; ~40 ms in all, and less than 500 objects of garbage are left when start-up ends);
`settle()`, once the first workspaces are up, moves everything that exists then out of
future collections (`gc.freeze()`, the pattern CPython documents for long-lived servers) and
restores the thresholds, so later collections — while a plan streams, say — no longer walk
the start-up heap.
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
