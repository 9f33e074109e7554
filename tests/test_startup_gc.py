"""The collector while the server starts: a higher first threshold, then everything that
exists is frozen and the thresholds are restored, once."""

from __future__ import annotations

import gc

from plan_lsp import startup


def test_start_up_thresholds_then_frozen_and_restored() -> None:
    before = gc.get_threshold()
    frozen = gc.get_freeze_count()
    try:
        startup.begin()
        startup.begin()  # a second call changes nothing
        assert gc.get_threshold() == startup.START_THRESHOLDS
        long_lived = [[i] for i in range(1000)]
        startup.settle()
        assert gc.get_threshold() == before
        assert gc.get_freeze_count() >= frozen + len(long_lived)
        startup.settle()  # start-up ends once
        assert gc.get_threshold() == before
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
