"""Test tiers, markers by construction, the unit tier's process guard, hypothesis profiles.

Tiers (`scripts/test.sh --unit`, `--fast`, no flag):
- `unit`: tests that start no process at all: no server, no sandbox, no editor, no git or
  bash of their own. A test lands here unless a marker below takes it out, and while it runs
  every way of starting a process raises (and fails it even if the code under test swallows
  the error): a unit test that starts one must be marked, not slip in.
- `fast`: the unit tier plus the gate and classifier tests (`gate`, `classifier`) that start
  processes but no server and no sandbox.
- everything else is `slow`: `-m "not slow"` is the fast tier, as it always was.

Markers given by place and by construction, so a new test cannot forget them:
- below tests/e2e, tests/reliability, tests/bench, tests/redteam: `e2e`, `reliability`,
  `bench`, `redteam` (and `server` for the first three);
- a test module that imports, directly or through other modules of tests/, the server
  harness (tests/lsp_harness.py) is `server`; the sandbox support (tests/sandbox_support.py)
  is `sandbox`;
- the real editors' files are `editors`.
A test that starts some other process (git, bash, the command line) is marked `process` in
its file; one marked `slow` by hand is out of the unit and the fast tier.
"""

from __future__ import annotations

import ast
import atexit
import os
import platform
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# The server keeps every workspace's session state in the user's state folder
# ($XDG_STATE_HOME/plan-lsp unless PLAN_LSP_STATE_DIR names another): the tests, and the
# servers and editors they start (they inherit the environment), never use the real one.
# This folder serves what starts before a test (a module's fixtures); every test gets its
# own (`state_dir` below).
_STATE_HOME = tempfile.mkdtemp(prefix="plan-lsp-state-")
atexit.register(shutil.rmtree, _STATE_HOME, True)
os.environ["XDG_STATE_HOME"] = _STATE_HOME
os.environ.pop("PLAN_LSP_STATE_DIR", None)

# The model SDKs describe the platform in their headers, and the first `platform.processor()`
# of a process runs `uname -p`: asked here once, so no unit test starts it depending on order.
platform.processor()

# Hypothesis: `ci` is the thorough profile (CI=true, and any run that does not choose);
# `dev` is what scripts/test.sh picks for local `--unit`/`--fast` runs (few examples, no
# deadline); `nightly` for long hunts. HYPOTHESIS_PROFILE overrides all of them.
settings.register_profile(
    "ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "dev", max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "nightly", max_examples=10_000, deadline=None, suppress_health_check=list(HealthCheck)
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


pytest_plugins = ("pytester",)  # tests/test_test_tiers.py runs the tier hooks on a small suite

TESTS = Path(__file__).resolve().parent
# directory below tests/ → markers its tests get
_PLACE_MARKERS = {
    "e2e": ("e2e", "server"),
    "reliability": ("reliability", "server"),
    "bench": ("bench",),
    "redteam": ("redteam",),
}
# a module of tests/ → the marker every test importing it (directly or not) gets
_MODULE_MARKERS = {
    "tests.lsp_harness": "server",
    "tests.sandbox_support": "sandbox",
}
# Real editors: run on their own, not beside other tests (scripts/test.sh), so their timings
# are an editor's, not a crowded machine's.
_EDITOR_FILES = {
    "test_vscode.py",
    "test_emacs.py",
    "test_neovim.py",
    "test_vim_coc.py",
    "test_vim_steps.py",
    "test_emacs_steps.py",
    "test_acp_clients.py",
}
# The execution gate's and the shell classifier's tests: in the fast tier unless they need a
# server or a sandbox.
_GATE_FILES = {"test_execution_gate.py", "test_gate_properties.py", "test_definition_gate.py"}
_CLASSIFIER_FILES = {
    "test_shell_classifier.py",
    "test_shell_corpus.py",
    "test_shell_properties.py",
    "test_shell_flow.py",
    "test_shell_cli.py",
    "test_shell_benign_exec.py",
}
# Markers that take a test out of the fast tier (`slow` given by hand: a long test).
OUT_OF_FAST = ("server", "sandbox", "redteam", "editors", "e2e", "reliability", "bench", "slow")
# Markers that take a test out of the unit tier.
OUT_OF_UNIT = (*OUT_OF_FAST, "process")


def _module_file(name: str) -> Path | None:
    """tests.x.y → its file in this checkout (a package's __init__.py), else None."""
    if name != "tests" and not name.startswith("tests."):
        return None
    base = TESTS.parent.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@cache
def _imports_of(path: Path) -> frozenset[str]:
    """Modules of tests/ that `path` imports anywhere (top level or inside a function)."""
    try:
        tree = ast.parse(path.read_bytes(), str(path))
    except (OSError, SyntaxError):
        return frozenset()
    inside = path.is_relative_to(TESTS.parent)
    package = ".".join(path.relative_to(TESTS.parent).parts[:-1]) if inside else ""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            names.add(module)
            # `from tests import lsp_harness` / `from tests.e2e import scripts`
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return frozenset(n for n in names if n == "tests" or n.startswith("tests."))


@cache
def _reached(path: Path) -> frozenset[str]:
    """Every module of tests/ that importing `path` imports, transitively."""
    seen: set[str] = set()
    todo = list(_imports_of(path))
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        file = _module_file(name)
        if file is not None:
            todo.extend(_imports_of(file))
    return frozenset(seen)


def markers_for(path: Path) -> set[str]:
    """The markers a test in `path` gets by construction (place, imports, file name)."""
    found: set[str] = set()
    try:
        below = path.resolve().relative_to(TESTS).parts
    except ValueError:
        below = ()
    if len(below) > 1:
        found.update(_PLACE_MARKERS.get(below[0], ()))
    reached = _reached(path.resolve())
    found.update(marker for module, marker in _MODULE_MARKERS.items() if module in reached)
    if path.name in _EDITOR_FILES:
        found.add("editors")
    if path.name in _GATE_FILES:
        found.add("gate")
    if path.name in _CLASSIFIER_FILES:
        found.add("classifier")
    return found


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Markers by construction, then the tier markers: `unit`, `fast`, else `slow`."""
    for item in items:
        for name in sorted(markers_for(item.path)):
            item.add_marker(getattr(pytest.mark, name))
        has = {mark.name for mark in item.iter_markers()}
        if not has & set(OUT_OF_UNIT):
            item.add_marker(pytest.mark.unit)
            item.add_marker(pytest.mark.fast)
        elif has & {"gate", "classifier"} and not has & set(OUT_OF_FAST):
            item.add_marker(pytest.mark.fast)
        else:
            item.add_marker(pytest.mark.slow)


# -- the unit tier starts no process --------------------------------------------------------

UNIT_TIER_MESSAGE = "unit tier: this test starts a process; mark it"


class ProcessInUnitTier(RuntimeError):
    pass


@contextmanager
def no_processes(attempts: list[str]) -> Iterator[None]:
    """While inside: starting a process raises ProcessInUnitTier and is recorded in
    `attempts` (so a caller that swallows the error still fails the test)."""

    def refuse(what: str) -> None:
        attempts.append(what)
        raise ProcessInUnitTier(f"{UNIT_TIER_MESSAGE} ({what})")

    def execute_child(self: subprocess.Popen[Any], args: Any, *rest: Any, **kw: Any) -> None:
        refuse(f"subprocess {args!r}")

    def refusing(name: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            refuse(f"os.{name}{args[:2]!r}")

        return call

    saved: list[tuple[object, str, object]] = [
        (subprocess.Popen, "_execute_child", subprocess.Popen._execute_child)  # type: ignore[attr-defined]
    ]
    subprocess.Popen._execute_child = execute_child  # type: ignore[attr-defined]
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system", "execv", "execve"):
        if hasattr(os, name):
            saved.append((os, name, getattr(os, name)))
            setattr(os, name, refusing(name))
    try:
        yield
    finally:
        for owner, name, original in reversed(saved):
            setattr(owner, name, original)


def _guarded(item: pytest.Item) -> list[str] | None:
    if item.get_closest_marker("unit") is None:
        return None
    attempts: list[str] = item.stash.setdefault(_ATTEMPTS, [])
    return attempts


_ATTEMPTS = pytest.StashKey[list[str]]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    attempts = _guarded(item)
    if attempts is None:
        return (yield)
    with no_processes(attempts):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    attempts = _guarded(item)
    if attempts is None:
        return (yield)
    with no_processes(attempts):
        try:
            result = yield
        except BaseException:
            if attempts:  # the refusal, however the test went on, is the news
                pytest.fail(f"{UNIT_TIER_MESSAGE}: {'; '.join(attempts)}", pytrace=False)
            raise
    if attempts:
        pytest.fail(f"{UNIT_TIER_MESSAGE}: {'; '.join(attempts)}", pytrace=False)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    attempts = _guarded(item)
    if attempts is None:
        return (yield)
    before = len(attempts)
    with no_processes(attempts):
        result = yield
    if len(attempts) > before:
        pytest.fail(f"{UNIT_TIER_MESSAGE}: {'; '.join(attempts[before:])}", pytrace=False)
    return result


@pytest.fixture(autouse=True)
def state_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test's own user state folder: `$XDG_STATE_HOME` points at a fresh folder (so
    the server's `$XDG_STATE_HOME/plan-lsp`, the returned path, is the test's alone), and
    `PLAN_LSP_STATE_DIR` is unset so a test that names another `XDG_STATE_HOME` (or `HOME`)
    for a server it starts is obeyed."""
    home = tmp_path_factory.mktemp("state-home")
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    monkeypatch.delenv("PLAN_LSP_STATE_DIR", raising=False)
    return home / "plan-lsp"
