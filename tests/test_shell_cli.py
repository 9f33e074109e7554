"""`plan-lsp check command`: one command, --protection, and the --stdin-jsonl batch mode."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from plan_lsp import cli


def _run(argv: list[str], monkeypatch: pytest.MonkeyPatch, stdin: str = "") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setattr("sys.stderr", err)
    try:
        code = cli.main(["check", "command", *argv])
    except SystemExit as exc:  # argparse usage errors
        code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(autouse=True)
def _in_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "README.md").write_text("hi\n")


def test_single_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = _run(["--protection", "classified", "git log -1"], monkeypatch)
    assert code == 0
    assert json.loads(out) == {
        "cmd": "git log -1",
        "allowed": True,
        "capabilities": ["read:git"],
        "reasons": ["`git log` reads history (read:git)"],
    }


def test_single_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = _run(["--protection", "classified", "find . -delete"], monkeypatch)
    assert code == 1
    obj = json.loads(out)
    assert obj["allowed"] is False and any("-delete" in r for r in obj["reasons"])


def test_protection_levels_differ(monkeypatch: pytest.MonkeyPatch) -> None:
    code, _, _ = _run(["--protection", "classified", "frobnicate"], monkeypatch)
    assert code == 1
    code, out, _ = _run(["--protection", "sandboxed", "frobnicate"], monkeypatch)
    assert code == 0 and json.loads(out)["allowed"] is True
    code, out, _ = _run(["--protection", "sandboxed", "rm -rf x"], monkeypatch)
    assert code == 1 and "write:filesystem" in json.loads(out)["capabilities"]


@pytest.mark.parametrize(("mechanism", "allowed"), [("bubblewrap", True), (None, False)])
def test_default_protection_is_what_this_machine_would_use(
    monkeypatch: pytest.MonkeyPatch, mechanism: str | None, allowed: bool
) -> None:
    import plan_lsp.policy.sandbox as sandbox

    monkeypatch.setattr(sandbox, "sandbox_kind", lambda: mechanism)
    code, out, _ = _run(["frobnicate"], monkeypatch)
    assert json.loads(out)["allowed"] is allowed
    assert code == (0 if allowed else 1)


def test_usage_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = _run([], monkeypatch)
    assert code == 2 and out == "" and "give a command" in err
    code, _, err = _run(["--stdin-jsonl", "ls"], monkeypatch)
    assert code == 2 and "not both" in err
    code, _, err = _run(["--protection", "off", "ls"], monkeypatch)
    assert code == 2 and "invalid choice" in err


def test_batch_keeps_order_and_survives_bad_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = [
        json.dumps({"cmd": "ls -la"}),
        "this is not json",
        json.dumps({"cmd": "rm -rf /"}),
        json.dumps([1, 2]),
        json.dumps({"command": "ls"}),
        json.dumps({"cmd": 42}),
        "",
        json.dumps({"cmd": "git status"}),
        json.dumps({"cmd": "echo " + "$(" * 5000 + ")" * 5000}),
        "[" * 100_000 + "]" * 100_000,
    ]
    stdin = "\n".join(lines) + "\n"
    code, out, _ = _run(["--protection", "classified", "--stdin-jsonl"], monkeypatch, stdin)
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == len(lines)
    for row in rows:
        assert set(row) == {"cmd", "allowed", "capabilities", "reasons"}
    expected = [True, False, False, False, False, False, False, True, False, False]
    assert [r["allowed"] for r in rows] == expected
    assert rows[0]["cmd"] == "ls -la" and rows[2]["cmd"] == "rm -rf /"
    assert "not valid JSON" in rows[1]["reasons"][0]
    assert "no string" in rows[4]["reasons"][0]
    assert rows[5]["cmd"] == 42
    assert any("longer than" in r or "nested" in r for r in rows[8]["reasons"])


@pytest.mark.process
def test_deep_nesting_never_prints_a_traceback(tmp_path: Path) -> None:
    cmds = [
        "echo " + "$(" * 3000 + ")" * 3000,
        "if true; then " * 1000 + "ls" + "; fi" * 1000,
        "echo " + "${a:-" * 2000 + "}" * 2000,
        "(" * 3000 + "ls" + ")" * 3000,
    ]
    stdin = "".join(json.dumps({"cmd": c}) + "\n" for c in cmds)
    for protection in ("classified", "sandboxed"):
        proc = subprocess.run(
            [sys.executable, "-m", "plan_lsp.cli", "check", "command", "--stdin-jsonl",
             "--protection", protection],
            input=stdin, capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr
        rows = [json.loads(line) for line in proc.stdout.splitlines()]
        assert len(rows) == len(cmds)
        assert all(isinstance(r["allowed"], bool) and r["reasons"] for r in rows)
        assert not rows[0]["allowed"] and not rows[3]["allowed"]
