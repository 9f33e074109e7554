"""The VS Code extension in a real workbench (code-server + Chromium via playwright-core).

Runs `client-vscode/e2e/run-e2e.mjs`, which packages the extension, installs the `.vsix`,
drives a scripted plan → approve → do session through the UI and saves screenshots to
`test-artifacts/vscode/`. The tools come from `client-vscode/scripts/install-e2e.sh`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CLIENT = REPO / "client-vscode"
CODE_SERVER = CLIENT / ".e2e" / "node_modules" / ".bin" / "code-server"
ARTIFACTS = REPO / "test-artifacts" / "vscode"

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _missing_tools() -> str | None:
    if not CODE_SERVER.exists():
        return f"code-server is not installed (run {CLIENT / 'scripts' / 'install-e2e.sh'})"
    if shutil.which("node") is None:
        return "node is not installed"
    if not (CLIENT / "node_modules" / "playwright-core").exists():
        return "client-vscode npm dependencies are not installed (npm ci in client-vscode)"
    if not Path(os.environ.get("CHROMIUM", "/usr/bin/chromium")).exists():
        return "chromium is not installed (apt-get install chromium)"
    return None


@pytest.mark.timeout(600)
def test_vscode_extension_end_to_end() -> None:
    reason = _missing_tools()
    if reason is not None:
        pytest.skip(reason)
    env = {**os.environ, "PLAN_LSP_PYTHON": sys.executable, "E2E_ARTIFACTS": str(ARTIFACTS)}
    proc = subprocess.run(
        ["node", str(CLIENT / "e2e" / "run-e2e.mjs")],
        cwd=CLIENT,
        env=env,
        capture_output=True,
        text=True,
        timeout=540,
        check=False,
    )
    report = ARTIFACTS / "results.json"
    results = json.loads(report.read_text())["results"] if report.exists() else []
    failed = [r for r in results if not r["ok"]]
    assert proc.returncode == 0 and results and not failed, (
        f"exit {proc.returncode}; failed: {failed}\n--- stdout\n{proc.stdout[-6000:]}"
        f"\n--- stderr\n{proc.stderr[-4000:]}"
    )
    names = {r["name"] for r in results}
    assert "Approve code lens switches to Build and the Do edit lands in the editor" in names
