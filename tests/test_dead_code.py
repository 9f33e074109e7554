"""No dead code: vulture over plan_lsp/ finds nothing that vulture_whitelist.py does not
explain (names a framework reads, names loaded by name, names used outside the package, and
a list pending removal). Runs vulture in-process: no process is started."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from tests.needs import need

REPO = Path(__file__).resolve().parents[1]
WHITELIST = REPO / "vulture_whitelist.py"
MIN_CONFIDENCE = 60


def _findings(paths: list[Path]) -> list[str]:
    from vulture import Vulture  # a dev tool: imported after need() has checked for it

    scan = Vulture()
    scan.scavenge([str(p) for p in paths], exclude=[str(REPO / "plan_lsp" / "demo" / "sample")])
    return [
        item.get_report(add_size=False)
        for item in scan.get_unused_code(min_confidence=MIN_CONFIDENCE)
    ]


def test_vulture_finds_no_dead_code_in_the_package() -> None:
    need(importlib.util.find_spec("vulture") is not None, "vulture (a dev dependency)")
    findings = _findings([REPO / "plan_lsp", WHITELIST])
    assert findings == [], "dead code (remove it, or explain it in vulture_whitelist.py):\n" + (
        "\n".join(findings)
    )


def test_the_whitelist_names_only_what_the_package_defines(tmp_path: Path) -> None:
    """A whitelisted name that no longer exists in plan_lsp/ is a stale entry."""
    need(importlib.util.find_spec("vulture") is not None, "vulture (a dev dependency)")
    findings = _findings([REPO / "plan_lsp"])
    flagged = {finding.split("'")[1] for finding in findings if "'" in finding}
    listed = {
        line.split("  #")[0].removeprefix("_.")
        for line in WHITELIST.read_text().splitlines()
        if line.startswith("_.")
    }
    assert listed - flagged == set(), "whitelisted but no longer flagged: remove these entries"


def test_vulture_would_report_a_dead_function(tmp_path: Path) -> None:
    """The check is live: an unused function in a scanned file is reported."""
    need(importlib.util.find_spec("vulture") is not None, "vulture (a dev dependency)")
    module = tmp_path / "module.py"
    module.write_text(
        "def used() -> int:\n    return 1\n\n\ndef unused() -> int:\n    return used()\n"
    )
    assert [f.split(": ", 1)[1] for f in _findings([module])] == [
        "unused function 'unused' (60% confidence)"
    ]
