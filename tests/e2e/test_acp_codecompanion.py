"""CodeCompanion.nvim 19.22 (an ACP client in Neovim 0.11, from the pinned tarballs in
$PLAN_LSP_CODECOMPANION_DIR, else the tools folder beside the checkout or beside the
repository it was cloned from, as tests/e2e/vim/install.sh finds coc.nvim) drives
`plan-lsp acp`: when it asks the user to approve the plan, its chat buffer already shows the
whole plan, above the question, and why a write was refused before (read from the buffer,
not from the wire)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

from tests.e2e.scripts import PLAN_TEXT, plan_then_do_turns, sample_project, write_script
from tests.e2e.test_neovim import NVIM_BINARIES
from tests.needs import need

REPO = Path(__file__).resolve().parents[2]


def _tools() -> Path:
    if given := os.environ.get("PLAN_LSP_CODECOMPANION_DIR"):
        return Path(given)
    beside = REPO.parent / "shared" / "tools"
    origin = subprocess.run(
        ["git", "-C", str(REPO), "config", "--get", "remote.origin.url"],
        capture_output=True, text=True, check=False,
    ).stdout.strip()  # fmt: skip
    if not beside.is_dir() and origin and Path(origin).is_dir():
        return Path(origin).resolve().parent / "shared" / "tools"
    return beside


TOOLS = _tools()
TARBALLS = {
    "codecompanion.nvim": TOOLS / "codecompanion.nvim-f1afd025.tar.gz",
    "plenary.nvim": TOOLS / "plenary.nvim-b9fd522.tar.gz",
}
DRIVER = Path(__file__).resolve().parent / "nvim" / "codecompanion_session.lua"


def test_codecompanion_shows_the_plan_before_asking_to_approve_it(tmp_path: Path) -> None:
    nvim = NVIM_BINARIES["0.11"]
    need(Path(nvim).exists(), f"Neovim 0.11 is not installed at {nvim}")
    need(all(t.exists() for t in TARBALLS.values()), f"CodeCompanion tarballs not in {TOOLS}")
    plugins = tmp_path / "plugins"
    for tarball in TARBALLS.values():
        with tarfile.open(tarball) as archive:
            archive.extractall(plugins, filter="data")
    ws = sample_project(tmp_path / "ws")
    script = write_script(tmp_path / "script.json", plan_then_do_turns(PLAN_TEXT))
    agent = [sys.executable, "-m", "plan_lsp", "acp", "--provider", "scripted"]
    agent += ["--script", str(script), "--plan-shell", "classified"]
    out = tmp_path / "seen.json"
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_STATE_HOME": str(home / ".local/state"),
        "CC_PLUGIN": str(plugins / "codecompanion.nvim"),
        "CC_PLENARY": str(plugins / "plenary.nvim"),
        "CC_AGENT": json.dumps(agent),
        "CC_OUT": str(out),
    }
    done = subprocess.run(
        [nvim, "--headless", "--clean", "-u", str(DRIVER)],
        cwd=ws, env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert out.exists(), done.stdout + done.stderr
    seen = json.loads(out.read_text())
    assert seen["why"] == "asked", seen
    (asked,) = seen["asked"]
    assert asked["name"] == "switch_mode"
    text = asked["text"]
    question = text.rindex("Build from this plan")
    for line in PLAN_TEXT.strip().splitlines():
        assert 0 <= text.find(line) < question, (line, text)
    # The write refused in plan mode: CodeCompanion shows a failed call by its title only, so
    # the reason is in the conversation too.
    assert "Refused: write_file: plan mode only allows read-only tools" in text[:question], text
