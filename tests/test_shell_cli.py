"""`plan-lsp check command`: one command, and the --stdin-jsonl batch mode."""

from __future__ import annotations

import io
import json

import pytest

from plan_lsp.policy.shell.check_cli import check_command_main


def _run(
    argv: list[str], stdin: str = "", monkeypatch: pytest.MonkeyPatch | None = None
) -> tuple[int, str, str]:
    assert monkeypatch is not None
    out, err = io.StringIO(), io.StringIO()
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setattr("sys.stderr", err)
    code = check_command_main(argv)
    return code, out.getvalue(), err.getvalue()


def test_single_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = _run(["git log -1"], monkeypatch=monkeypatch)
    assert code == 0
    assert json.loads(out) == {
        "cmd": "git log -1",
        "allowed": True,
        "capabilities": ["read:git"],
        "reasons": ["`git log` reads history (read:git)"],
    }


def test_single_denied(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = _run(["find . -delete"], monkeypatch=monkeypatch)
    assert code == 1
    obj = json.loads(out)
    assert obj["allowed"] is False
    assert "write:filesystem" in obj["capabilities"]
    assert any("-delete" in r for r in obj["reasons"])


def test_allow_option_widens_and_narrows(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = _run(["--allow", "read:*,write:filesystem", "rm x"], monkeypatch=monkeypatch)
    assert code == 0 and json.loads(out)["allowed"] is True
    code, out, _ = _run(["--allow", "read:filesystem", "git status"], monkeypatch=monkeypatch)
    assert code == 1 and json.loads(out)["allowed"] is False


def test_unknown_capability_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = _run(["--allow", "read:everything", "ls"], monkeypatch=monkeypatch)
    assert code == 2 and out == "" and "unknown capability" in err


def test_missing_command_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    code, _, err = _run([], monkeypatch=monkeypatch)
    assert code == 2 and "give a command" in err


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
    ]
    code, out, _ = _run(["--stdin-jsonl"], "\n".join(lines) + "\n", monkeypatch=monkeypatch)
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == len(lines)
    for row in rows:
        assert set(row) == {"cmd", "allowed", "capabilities", "reasons"}
    assert [r["allowed"] for r in rows] == [True, False, False, False, False, False, False, True]
    assert rows[0]["cmd"] == "ls -la" and rows[2]["cmd"] == "rm -rf /"
    assert rows[7]["cmd"] == "git status"
    assert "not valid JSON" in rows[1]["reasons"][0]
    assert "no string" in rows[4]["reasons"][0]
    assert rows[5]["cmd"] == 42


def test_batch_with_allow(monkeypatch: pytest.MonkeyPatch) -> None:
    stdin = json.dumps({"cmd": "touch x"}) + "\n"
    _, out, _ = _run(["--allow", "all", "--stdin-jsonl"], stdin, monkeypatch=monkeypatch)
    assert json.loads(out)["allowed"] is True


def test_batch_and_command_together_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    code, _, err = _run(["--stdin-jsonl", "ls"], monkeypatch=monkeypatch)
    assert code == 2 and "not both" in err
