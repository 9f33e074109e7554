"""The test tiers hold by construction (tests/conftest.py): a test is taken out of the unit
tier by where it lives and what it imports, and a unit test that starts a process fails."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import TESTS, UNIT_TIER_MESSAGE, ProcessInUnitTier, markers_for, no_processes


def test_places_give_their_markers() -> None:
    assert {"e2e", "server"} <= markers_for(TESTS / "e2e" / "test_agent_runs.py")
    assert {"reliability", "server"} <= markers_for(TESTS / "reliability" / "test_concurrency.py")
    assert "redteam" in markers_for(TESTS / "redteam" / "test_landlock_reach.py")
    assert "bench" in markers_for(TESTS / "bench" / "test_bench_smoke.py")
    assert "editors" in markers_for(TESTS / "e2e" / "test_neovim.py")


def test_importing_the_harness_or_the_sandbox_support_marks_a_module() -> None:
    assert {"server", "sandbox"} <= markers_for(TESTS / "test_home_allow_list_server.py")
    assert "sandbox" in markers_for(TESTS / "test_sandbox.py")
    assert not markers_for(TESTS / "test_plan_text.py") & {"server", "sandbox"}


def test_an_import_through_another_test_module_or_inside_a_function_counts(
    tmp_path: Path,
) -> None:
    """A new test file that reaches the harness only through tests/e2e/scripts.py, or imports
    the sandbox support inside its test, is still out of the unit tier."""
    through = tmp_path / "test_through.py"
    through.write_text("from tests.e2e.scripts import sample_project\n")
    inside = tmp_path / "test_inside.py"
    inside.write_text("def test_x():\n    from tests import sandbox_support\n")
    assert "server" in markers_for(through)
    assert "sandbox" in markers_for(inside)
    assert markers_for(tmp_path / "test_none.py") == set()


def test_gate_and_classifier_files_are_named() -> None:
    assert "gate" in markers_for(TESTS / "test_execution_gate.py")
    assert "classifier" in markers_for(TESTS / "test_shell_classifier.py")


def test_every_way_to_start_a_process_is_refused_and_recorded(tmp_path: Path) -> None:
    attempts: list[str] = []
    with no_processes(attempts):
        with pytest.raises(ProcessInUnitTier, match=UNIT_TIER_MESSAGE):
            subprocess.run(["true"], check=False)
        with pytest.raises(ProcessInUnitTier):
            os.system("true")
        with pytest.raises(ProcessInUnitTier):
            os.fork()

        async def spawn() -> None:
            await asyncio.create_subprocess_exec("true")

        with pytest.raises(ProcessInUnitTier):
            asyncio.run(spawn())
    assert len(attempts) == 4
    assert "['true']" in attempts[0]


def test_a_unit_test_that_swallows_the_refusal_still_fails(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(
        test_inner="""
        import subprocess

        def test_swallows():
            try:
                subprocess.run(["true"])
            except Exception:
                pass

        def test_starts_nothing():
            assert True
        """
    )
    result = pytester.runpytest_inprocess("-p", "tests.conftest", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([f"*{UNIT_TIER_MESSAGE}*subprocess*true*"])
