import atexit
import os
import shutil
import tempfile

from hypothesis import HealthCheck, settings

# The server keeps the key that seals its state in the user's state folder
# ($XDG_STATE_HOME/plan-lsp): the tests, and the servers and editors they start, get their own.
_STATE_HOME = tempfile.mkdtemp(prefix="plan-lsp-state-")
atexit.register(shutil.rmtree, _STATE_HOME, True)
os.environ["XDG_STATE_HOME"] = _STATE_HOME

settings.register_profile(
    "ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "nightly", max_examples=10_000, deadline=None, suppress_health_check=list(HealthCheck)
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


_MARKERS = {
    # directory below tests/ → markers its tests get
    "e2e": ("e2e", "slow"),
    "reliability": ("slow",),
    "bench": ("slow",),
}
# Files whose tests start real servers, editors or sandboxes although they live at the top.
_SLOW_FILES = {"test_shell_attacks.py", "test_mcp_manager.py"}
# Real editors: run on their own, not beside other tests (scripts/test.sh), so their timings
# are an editor's, not a crowded machine's.
_EDITOR_FILES = {"test_vscode.py", "test_emacs.py", "test_neovim.py", "test_vim_coc.py"}


def pytest_collection_modifyitems(config: object, items: list[object]) -> None:
    """Markers by place, so none is forgotten: `-m "not slow"` is the fast suite
    (`scripts/test.sh --fast`)."""
    import pytest

    for item in items:
        path = item.path  # type: ignore[attr-defined]
        parts = path.relative_to(path.parents[len(path.parents) - 1]).parts
        below = parts[parts.index("tests") + 1] if "tests" in parts else ""
        for name in _MARKERS.get(below, ()):
            item.add_marker(getattr(pytest.mark, name))  # type: ignore[attr-defined]
        if path.name in _SLOW_FILES:
            item.add_marker(pytest.mark.slow)  # type: ignore[attr-defined]
        if path.name in _EDITOR_FILES:
            item.add_marker(pytest.mark.editors)  # type: ignore[attr-defined]
