"""Through the real server: an edit's `planLsp/requestPermission` carries the file's text
before (the open buffer, else the disk; null for a new file) and the exact text after, and
once allowed the file holds exactly that after-text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e.scripts import scripted_session


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


async def test_edit_requests_carry_before_and_after_and_the_file_ends_as_after(
    tmp_path: Path,
) -> None:
    crlf = "first line\r\nsecond line\r\nthird line"  # CRLF, no final line break
    turns = [
        {
            "tool_calls": [
                # The model saw LF line endings.
                _call(
                    "edit_file",
                    path="crlf.txt",
                    old_text="second line\nthird",
                    new_text="2nd line\nand the third",
                ),
                _call("write_file", path="new/made.txt", content="made\n"),
                _call("edit_file", path="open.py", old_text="unsaved", new_text="edited"),
                _call("edit_file", path="big.txt", old_text="needle", new_text="pin"),
            ]
        },
        {"text": "done"},
    ]
    ws, _t, cm = scripted_session(tmp_path, turns, permission_requests=True)
    (ws / "crlf.txt").write_bytes(crlf.encode())
    (ws / "open.py").write_text("x = 'saved'\n")
    big = "y" * (3 * 1024 * 1024) + "\nneedle\n"
    (ws / "big.txt").write_text(big)
    async with cm as ed:
        await ed.request("planLsp/setMode", {"mode": "build"})
        ed.open(ws / "open.py", "x = 'unsaved'\n")
        ed.ed.answer_permission = lambda p: "allow_once"
        result = await ed.request("planLsp/prompt", {"text": "edit"}, timeout=120)
        assert result["stopReason"] == "end_turn"
        requests = {p["arguments"]["path"]: p for p in ed.ed.permission_requests}
        assert set(requests) == {"crlf.txt", "new/made.txt", "open.py", "big.txt"}

        change = requests["crlf.txt"]["change"]
        assert change == {
            "uri": (ws / "crlf.txt").resolve().as_uri(),
            "before": crlf,
            "after": "first line\r\n2nd line\r\nand the third line",
            "truncated": False,
        }
        assert (ws / "crlf.txt").read_bytes() == change["after"].encode()

        change = requests["new/made.txt"]["change"]
        assert change["before"] is None and change["after"] == "made\n"
        assert (ws / "new" / "made.txt").read_bytes() == b"made\n"

        # The open buffer is the truth: its unsaved text, changed through the editor.
        change = requests["open.py"]["change"]
        assert change["before"] == "x = 'unsaved'\n"
        assert change["after"] == "x = 'edited'\n"
        assert ed.buffer_text(ws / "open.py") == change["after"]

        # Too big to send: the request says so and carries neither text.
        change = requests["big.txt"]["change"]
        assert change["truncated"] is True
        assert change["before"] is None and change["after"] is None
        assert (ws / "big.txt").read_text() == big.replace("needle", "pin")


async def test_a_call_that_will_fail_asks_without_a_change(tmp_path: Path) -> None:
    turns = [
        {"tool_calls": [_call("edit_file", path="twice.txt", old_text="a", new_text="b")]},
        {"text": "done"},
    ]
    ws, _t, cm = scripted_session(tmp_path, turns, permission_requests=True)
    (ws / "twice.txt").write_text("a a\n")
    async with cm as ed:
        await ed.request("planLsp/setMode", {"mode": "build"})
        ed.ed.answer_permission = lambda p: "allow_once"
        await ed.request("planLsp/prompt", {"text": "edit"})
        (request,) = ed.ed.permission_requests
        assert "change" not in request
        assert (ws / "twice.txt").read_text() == "a a\n"
