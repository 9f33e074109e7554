"""Guards on the JSON-RPC stream from the client, below pygls: a frame that announces an
absurd size is skipped instead of exhausting memory, and a request pygls cannot turn into
a message is answered with an error instead of being dropped."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, BinaryIO

# Larger bodies are refused: no editor sends a 64 MiB LSP message.
MAX_CONTENT_LENGTH = 64 * 1024 * 1024
# A header line longer than this is cut (it cannot be a valid header anyway).
MAX_HEADER_LINE = 64 * 1024

_CONTENT_LENGTH = re.compile(rb"^Content-Length: (\d+)\r\n$")


class GuardedStdin:
    """The subset of a binary stream pygls reads, with size limits on what it trusts."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw

    def readline(self) -> bytes:
        line = self.raw.readline(MAX_HEADER_LINE)
        match = _CONTENT_LENGTH.fullmatch(line)
        if match and int(match.group(1)) > MAX_CONTENT_LENGTH:
            # Renamed, pygls ignores it: the blank line that follows reads no body, and the
            # stream resynchronises on the next valid header.
            return b"X-Refused-Content-Length: " + match.group(1)[:32] + b"\r\n"
        return line

    def read(self, n: int) -> bytes:
        return self.raw.read(n)


@dataclass
class UnreadableRequest:
    """A request whose id is known but whose body pygls could not structure."""

    id: Any
    method: str
    reason: str
    jsonrpc: str = "2.0"


def shorten(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} characters)"
