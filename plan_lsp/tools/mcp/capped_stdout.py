"""Runs an MCP server with each message it writes capped in bytes, before anyone parses it
(docs/security.md): `python -I -S capped_stdout.py MAX_BYTES [--pid-file PATH] -- COMMAND...`

A longer line than MAX_BYTES is never held whole (head and tail kept): an answer whose id is
readable becomes a JSON-RPC error for that id (`error.data.planLsp == "message_too_large"`),
a request or notification is dropped, an answer without a readable id stops the server.
`--pid-file`: this process leads the server's group, so killing it stops the server at once.
Standard library only; no JSON parsed beyond the id.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys

HEAD_BYTES = 4096
TAIL_BYTES = 512
READ_CHUNK = 65536
TOO_LARGE = "message_too_large"
ERROR_CODE = -32603  # JSON-RPC internal error
CAPPED_NOTE_PREFIX = "plan-lsp: "

_JSON_ID = rb'(-?\d{1,30}|"(?:[^"\\]|\\.){0,200}")'
_START = rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?'
_ID_FIRST = re.compile(_START + rb'"id"\s*:\s*' + _JSON_ID)
_ID_LAST = re.compile(rb'"id"\s*:\s*' + _JSON_ID + rb"\s*\}\s*$")
_METHOD_FIRST = re.compile(_START + rb'"method"\s*:')


def message_id(head: bytes, tail: bytes) -> object | None:
    """The top-level id of a JSON-RPC answer from its first and last bytes, or None."""
    for pattern, part in ((_ID_FIRST, head), (_ID_LAST, tail)):
        found = pattern.search(part)
        if found is not None:
            try:
                value: object = json.loads(found.group(1))
            except ValueError:
                continue
            return value
    return None


def is_request(head: bytes) -> bool:
    return _METHOD_FIRST.search(head) is not None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _note(text: str) -> None:
    try:
        _write_all(2, f"{CAPPED_NOTE_PREFIX}{text}\n".encode())
    except OSError:
        pass


class Relay:
    """Forwards lines of at most `limit` bytes; replaces longer ones (see the module)."""

    def __init__(self, limit: int, out: int, child: int) -> None:
        self.limit = limit
        self.out = out
        self.child = child
        self.line = bytearray()
        self.over = 0  # bytes of the current line once it is over the limit, else 0
        self.head = b""
        self.tail = b""
        self.stopped = False

    def feed(self, chunk: bytes) -> None:
        start = 0
        while start < len(chunk) and not self.stopped:
            newline = chunk.find(b"\n", start)
            end = newline if newline >= 0 else len(chunk)
            self._add(chunk[start:end])
            if newline < 0:
                return
            self._end_line()
            start = newline + 1

    def finish(self) -> None:
        """The stream ended: forward a last line without its newline as it is."""
        if self.line and not self.over and not self.stopped:
            _write_all(self.out, bytes(self.line))
        self.line.clear()

    def _add(self, piece: bytes) -> None:
        if self.over:
            self.over += len(piece)
            self.tail = (self.tail + piece)[-TAIL_BYTES:]
        elif len(self.line) + len(piece) > self.limit:
            self.over = len(self.line) + len(piece)
            self.head = bytes(self.line[:HEAD_BYTES]) + piece[: max(0, HEAD_BYTES - len(self.line))]
            self.tail = (bytes(self.line[-TAIL_BYTES:]) + piece)[-TAIL_BYTES:]
            self.line = bytearray()
        else:
            self.line += piece

    def _end_line(self) -> None:
        if not self.over:
            self.line += b"\n"
            _write_all(self.out, bytes(self.line))
            self.line.clear()
            return
        size, head, tail = self.over, self.head, self.tail
        self.over, self.head, self.tail = 0, b"", b""
        what = (
            f"a message of {size:,} bytes from the MCP server is over the limit of "
            f"{self.limit:,} bytes for one message"
        )
        if is_request(head):
            _note(f"{what}; it was dropped")
            return
        rid = message_id(head, tail)
        if rid is None:
            _note(f"{what}, and its id could not be read; the server was stopped")
            self.stopped = True
            try:
                os.kill(self.child, signal.SIGKILL)
            except OSError:
                pass
            return
        error = {
            "jsonrpc": "2.0",
            "id": rid,
            "error": {
                "code": ERROR_CODE,
                "message": f"the answer was {size:,} bytes, over the limit of {self.limit:,} "
                "bytes for one message (max_message_bytes); it was dropped",
                "data": {"planLsp": TOO_LARGE, "bytes": size, "limit": self.limit},
            },
        }
        _note(f"{what}; it was dropped")
        _write_all(self.out, (json.dumps(error) + "\n").encode())


def _spawn(argv: list[str]) -> tuple[int, int]:
    """Start `argv` with its stdout on a pipe; (pid, read end)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.dup2(write_end, 1)
            os.close(read_end)
            os.close(write_end)
            # Python ignores these; an ignored signal would stay ignored across exec.
            for signum in (signal.SIGPIPE, signal.SIGXFSZ):
                signal.signal(signum, signal.SIG_DFL)
            os.execvp(argv[0], argv)
        except OSError as exc:
            _note(f"could not run {argv[0]!r}: {exc.strerror or exc}")
        os._exit(127)
    os.close(write_end)
    return pid, read_end


def main(args: list[str]) -> int:
    pid_file = None
    if len(args) >= 3 and args[1] == "--pid-file":
        pid_file, args = args[2], [args[0], *args[3:]]
    if len(args) < 3 or args[1] != "--" or not args[0].isdigit():
        _note("usage: capped_stdout.py MAX_BYTES [--pid-file PATH] -- COMMAND...")
        return 2
    if pid_file is not None:
        try:
            with open(pid_file, "w", encoding="ascii") as out:
                out.write(str(os.getpid()))
        except OSError as exc:
            _note(f"could not write {pid_file}: {exc.strerror or exc}")
            return 2
    limit = int(args[0])
    pid, source = _spawn(args[2:])
    relay = Relay(limit, 1, pid)
    try:
        while not relay.stopped:
            chunk = os.read(source, READ_CHUNK)
            if not chunk:
                relay.finish()
                break
            relay.feed(chunk)
    except OSError:  # our stdout closed: the client is gone
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    os.close(source)
    # The server's stdout ended: so does ours at once (the client sees the end, as it would
    # without the relay), even if the server itself lingers.
    os.close(1)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
