"""`plan-lsp check plan-path` (README, "Command line") through `check_plan_path_main`."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from plan_lsp.policy.plan_paths import check_plan_path_main


@pytest.fixture
def plans(tmp_path: Path) -> Path:
    plans_dir = tmp_path / "ws" / ".plan-lsp" / "plans"
    plans_dir.mkdir(parents=True)
    (tmp_path / "outside.md").write_text("x\n")
    (plans_dir / "out.md").symlink_to(tmp_path / "outside.md")
    return plans_dir


def records(out: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.splitlines()]


def test_single_path_ok(plans: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert check_plan_path_main(["--plans-dir", str(plans), "sub/new.md"]) == 0
    [record] = records(capsys.readouterr().out)
    assert record == {
        "path": "sub/new.md",
        "ok": True,
        "resolved": str(plans.resolve() / "sub" / "new.md"),
        "error": None,
    }


def test_single_path_refused(plans: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert check_plan_path_main(["--plans-dir", str(plans), "../x.md"]) == 1
    [record] = records(capsys.readouterr().out)
    assert record["ok"] is False
    assert record["resolved"] is None
    assert record["error"] == "Access denied: ../x.md contains '..'"


def test_default_name_when_no_path(plans: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert check_plan_path_main(["--plans-dir", str(plans)]) == 0
    [record] = records(capsys.readouterr().out)
    assert record["path"] is None
    assert record["resolved"] == str(plans.resolve() / "PLAN.md")


def test_stdin_jsonl_same_order_and_bad_lines(
    plans: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = [
        json.dumps({"path": "PLAN.md"}),
        "not json",
        json.dumps({"path": "out.md"}),
        "",
        json.dumps(["path"]),
        json.dumps({"path": 3}),
        json.dumps({"path": None}),
        json.dumps({"cmd": "ls"}),
        json.dumps({"path": "a\u0000.md"}),
        json.dumps({"path": "計画.md"}),
    ]
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(lines) + "\n"))
    assert check_plan_path_main(["--plans-dir", str(plans), "--stdin-jsonl"]) == 0
    out = records(capsys.readouterr().out)
    assert [r["ok"] for r in out] == [True, False, False, False, False, True, False, False, True]
    assert [r["path"] for r in out] == [
        "PLAN.md",
        None,
        "out.md",
        None,
        3,
        None,
        None,
        "a\u0000.md",
        "計画.md",
    ]
    assert all(set(r) == {"path", "ok", "resolved", "error"} for r in out)
    assert str(out[1]["error"]).startswith("invalid JSON")
    assert out[2]["error"] == "Access denied: out.md is outside the plans directory"
    assert out[8]["resolved"] == str(plans.resolve() / "計画.md")


def test_stdin_bytes_that_are_not_utf8(
    plans: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = b'{"path": "\xff.md"}\n{"path": "ok.md"}\n'
    stdin = io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8")
    monkeypatch.setattr("sys.stdin", stdin)
    assert check_plan_path_main(["--plans-dir", str(plans), "--stdin-jsonl"]) == 0
    out = records(capsys.readouterr().out)
    assert [r["ok"] for r in out] == [False, True]
    assert out[0]["error"] == "input line is not UTF-8"


def test_usage_errors(plans: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert check_plan_path_main([]) == 2
    assert check_plan_path_main(["--plans-dir", str(plans), "--stdin-jsonl", "x.md"]) == 2
    assert capsys.readouterr().out == ""
