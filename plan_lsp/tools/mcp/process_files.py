"""What an MCP server's process leaves behind outside its protocol: the tail of its stderr
(for error messages) and the folder of the relays' pid files."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import TextIO

# How much of a server's stderr is kept to explain a failure.
STDERR_TAIL_CHARS = 2000


class StderrTail:
    """A pipe for the server's stderr whose last characters are kept in memory."""

    def __init__(self, cap: int = STDERR_TAIL_CHARS) -> None:
        self._cap = cap
        self._data = bytearray()
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        self._read_fd: int | None = read_fd
        self.writer: TextIO = os.fdopen(write_fd, "w")
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(read_fd, self._on_readable)

    def _on_readable(self) -> None:
        if self._read_fd is None:
            return
        try:
            chunk = os.read(self._read_fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._close_reader()
            return
        self._data += chunk
        if len(self._data) > self._cap * 8:
            del self._data[: len(self._data) - self._cap * 4]

    def close_writer(self) -> None:
        """Our copy of the write end; the server keeps its own."""
        with contextlib.suppress(OSError):
            self.writer.close()

    def _close_reader(self) -> None:
        if self._read_fd is not None:
            self._loop.remove_reader(self._read_fd)
            with contextlib.suppress(OSError):
                os.close(self._read_fd)
            self._read_fd = None

    def close(self) -> None:
        self.close_writer()
        if self._read_fd is not None:
            self._on_readable()  # whatever is already in the pipe
        self._close_reader()

    def text(self) -> str:
        lines = self._data.decode("utf-8", "replace").strip().splitlines()
        return " | ".join(line.strip() for line in lines if line.strip())[-self._cap :]


_PRIVATE_DIR: Path | None = None


def private_dir() -> Path:
    """This process's folder for the relays' pid files (mode 0700), removed at exit."""
    global _PRIVATE_DIR
    if _PRIVATE_DIR is None:
        _PRIVATE_DIR = Path(tempfile.mkdtemp(prefix="plan-lsp-mcp-"))
        atexit.register(shutil.rmtree, _PRIVATE_DIR, True)
    return _PRIVATE_DIR
