"""The shell corpora: ordinary research commands (false-block bounds per protection level)
and commands the `classified` allow-list must refuse."""

from __future__ import annotations

from pathlib import Path

import pytest

from plan_lsp.policy.shell import PROTECTIONS, Protection, classify_command

CORPUS = Path(__file__).parent / "shell_corpus"


def _lines(name: str) -> list[str]:
    """One command a line; `{NL}` and `{TAB}` stand for a line break and a tab (here-documents)."""
    text = (CORPUS / name).read_text("utf-8")
    return [
        line.replace("{NL}", "\n").replace("{TAB}", "\t")
        for line in text.splitlines()
        if line.strip() and not line.startswith("#")
    ]


BENIGN = _lines("benign.txt")
BLOCKED = _lines("blocked.txt")
# The false-block bounds the classifier promises (docs/security.md).
MAX_FALSE_BLOCKS = {"classified": 0.05, "sandboxed": 0.0}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace with files, so unquoted globs in the corpora match something."""
    (tmp_path / "src").mkdir()
    for name in ("src/app.py", "README.md", "a.txt", "in.txt", "data.json", "data.csv"):
        (tmp_path / name).write_text("x\n")
    return tmp_path


# -- corpora ------------------------------------------------------------------------------


@pytest.mark.parametrize("protection", PROTECTIONS)
def test_benign_false_block_rate(protection: Protection, ws: Path) -> None:
    assert len(BENIGN) >= 300
    blocked = [
        cmd
        for cmd in BENIGN
        if not classify_command(cmd, protection=protection, roots=[ws], cwd=ws).allowed
    ]
    rate = len(blocked) / len(BENIGN)
    print(f"\n{protection}: {len(blocked)}/{len(BENIGN)} benign commands refused ({rate:.1%})")
    assert rate <= MAX_FALSE_BLOCKS[protection], (f"{rate:.1%}", blocked)


@pytest.mark.parametrize("cmd", BLOCKED)
def test_blocked_corpus_is_refused_under_classified(cmd: str, ws: Path) -> None:
    result = classify_command(cmd, roots=[ws], cwd=ws)
    assert not result.allowed, (cmd, result.reasons)
    assert result.reasons
