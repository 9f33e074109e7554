"""The self-test process's answer: only a well-formed status from a clean exit counts;
anything else makes the server probe by itself (deny by default)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from plan_lsp.policy.sandbox_probe import PROBE_MODULE, parse_answer

GOOD = {"mechanism": "bubblewrap", "detail": "held", "build_profile": True, "probe_ms": 12.5}


@pytest.mark.parametrize(
    ("out", "code", "accepted"),
    [
        (json.dumps(GOOD), 0, True),
        (json.dumps({**GOOD, "mechanism": None, "build_profile": False}), 0, True),
        ("log line\n" + json.dumps({**GOOD, "mechanism": "landlock"}), 0, True),
        (json.dumps(GOOD), 1, False),  # the process failed after printing
        (json.dumps({**GOOD, "mechanism": "docker"}), 0, False),  # not a mechanism we have
        (json.dumps({**GOOD, "build_profile": "yes"}), 0, False),
        (json.dumps({k: v for k, v in GOOD.items() if k != "detail"}), 0, False),
        (json.dumps([GOOD]), 0, False),
        ("", 0, False),
        ("not json", 0, False),
        ("\udcff", 0, False),
    ],
)
def test_only_a_clean_well_formed_answer_counts(out: str, code: int, accepted: bool) -> None:
    raw = out.encode("utf-8", "surrogateescape")
    assert (parse_answer(raw, b"boom", code) is not None) is accepted


@pytest.mark.process
def test_the_probe_process_prints_its_status() -> None:
    proc = subprocess.run(
        [sys.executable, "-P", "-m", PROBE_MODULE],
        env={**os.environ, "PLAN_LSP_SANDBOX": "none"},
        cwd="/",
        capture_output=True,
        timeout=60,
    )
    answer = parse_answer(proc.stdout, proc.stderr, proc.returncode)
    assert answer is not None, proc.stderr
    assert answer["mechanism"] is None and answer["build_profile"] is False
    assert "no mechanism enabled by PLAN_LSP_SANDBOX" in answer["detail"]
