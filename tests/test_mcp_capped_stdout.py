"""The relay that caps an MCP server's messages (`tools/mcp/capped_stdout.py`): lines within
the limit pass unchanged however they are chunked; a longer answer becomes an error for its
id (written first or last), a longer request or notification is dropped, and an answer
whose id cannot be read stops the server. Memory stays near the limit."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plan_lsp.tools.mcp.capped_stdout import CAPPED_NOTE_PREFIX, Relay, message_id
from plan_lsp.tools.mcp.connection import CAPPED_STDOUT

LIMIT = 1000


def _relay(tmp_path: Path, chunks: list[bytes], child: int = 0) -> tuple[list[bytes], Relay]:
    out_path = tmp_path / "out"
    fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        relay = Relay(LIMIT, fd, child)
        for chunk in chunks:
            relay.feed(chunk)
        relay.finish()
    finally:
        os.close(fd)
    return out_path.read_bytes().splitlines(keepends=True), relay


def _answer(rid: object, size: int, id_last: bool = False) -> bytes:
    body = {"content": [{"type": "text", "text": "x" * size}]}
    if id_last:  # as the TypeScript SDK writes it
        return json.dumps({"result": body, "jsonrpc": "2.0", "id": rid}).encode() + b"\n"
    return json.dumps({"jsonrpc": "2.0", "id": rid, "result": body}).encode() + b"\n"


def _chunked(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


@given(
    st.lists(st.binary(max_size=LIMIT).map(lambda b: b.replace(b"\n", b"")), max_size=8),
    st.integers(1, 700),
)
def test_lines_within_the_limit_pass_unchanged(lines: list[bytes], chunk: int) -> None:
    import tempfile

    data = b"".join(line + b"\n" for line in lines)
    with tempfile.TemporaryDirectory() as tmp:
        out, _ = _relay(Path(tmp), _chunked(data, chunk))
    assert b"".join(out) == data


@pytest.mark.parametrize("id_last", [False, True])
@pytest.mark.parametrize("rid", [7, "call-7"])
def test_an_answer_over_the_limit_becomes_an_error_for_its_id(
    tmp_path: Path, rid: object, id_last: bool
) -> None:
    big = _answer(rid, LIMIT * 50, id_last)
    data = _answer(1, 10) + big + _answer(2, 10)
    out, relay = _relay(tmp_path, _chunked(data, 333))
    assert len(out) == 3 and out[0] == _answer(1, 10) and out[2] == _answer(2, 10)
    error = json.loads(out[1])
    assert error["id"] == rid
    assert error["error"]["data"] == {
        "planLsp": "message_too_large",
        "bytes": len(big) - 1,
        "limit": LIMIT,
    }
    assert f"{len(big) - 1:,} bytes" in error["error"]["message"]
    assert not relay.stopped
    assert len(relay.line) <= LIMIT and len(relay.tail) <= 512


def test_a_request_or_notification_over_the_limit_is_dropped(tmp_path: Path) -> None:
    note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"x": "y" * 5000}}
    data = json.dumps(note).encode() + b"\n" + _answer(3, 10)
    out, relay = _relay(tmp_path, [data])
    assert out == [_answer(3, 10)] and not relay.stopped


@pytest.mark.process
def test_an_answer_whose_id_cannot_be_read_stops_the_server(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        data = b'{"result": "' + b"x" * 5000 + b'", "id": {"odd": 1}, "jsonrpc": "2.0"}\n'
        out, relay = _relay(tmp_path, [data, _answer(4, 10)], child=child.pid)
        assert out == [] and relay.stopped
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        child.kill()


@pytest.mark.parametrize(
    ("head", "tail", "rid"),
    [
        (b'{"jsonrpc":"2.0","id":12,"result":', b"", 12),
        (b' { "id" : "a\\"b", "result":', b"", 'a"b'),
        (b'{"result":{"x":', b'}},"jsonrpc":"2.0","id":-3}', -3),
        (b'{"result":{"x":', b'"jsonrpc":"2.0","id":{"x":1}}', None),
        (b'{"result":{"id":5,', b'{"id":7}}}', None),  # nested ids are not the answer's
    ],
)
def test_the_id_is_read_only_at_the_top_level(head: bytes, tail: bytes, rid: object) -> None:
    assert message_id(head, tail) == rid


@pytest.mark.process
def test_the_relay_runs_a_server_and_reports_a_server_it_cannot_start(tmp_path: Path) -> None:
    echo = [sys.executable, "-c", "import sys; sys.stdout.write(sys.stdin.read())"]
    done = subprocess.run(
        [sys.executable, "-I", "-S", str(CAPPED_STDOUT), str(LIMIT), "--", *echo],
        input=b'{"id":1}\n' + _answer(9, LIMIT * 10),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert lines[0] == b'{"id":1}' and json.loads(lines[1])["id"] == 9
    assert CAPPED_NOTE_PREFIX.encode() in done.stderr
    missing = subprocess.run(
        [sys.executable, "-I", "-S", str(CAPPED_STDOUT), str(LIMIT), "--", "/nonexistent/x"],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert missing.returncode == 127
    assert b"could not run '/nonexistent/x'" in missing.stderr


@pytest.mark.process
def test_the_end_of_the_servers_output_is_passed_on_at_once(tmp_path: Path) -> None:
    """A server that closes its stdout and lingers: the client sees the end (and restarts
    it), as it would without the relay."""
    linger = [sys.executable, "-c", "import os, time; os.close(1); time.sleep(60)"]
    relay = subprocess.Popen(
        [sys.executable, "-I", "-S", str(CAPPED_STDOUT), str(LIMIT), "--", *linger],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        assert relay.stdout is not None
        assert relay.stdout.read() == b""  # EOF while the server still runs
        assert relay.poll() is None
    finally:
        os.killpg(relay.pid, signal.SIGKILL)
        relay.wait()
