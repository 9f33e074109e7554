"""The server's copy of one open document, and how it learns that the client's copy took an
edit: the client's didChange reports, waited for until they bring the copy to the expected
text or go quiet."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pygls.uris import from_fs_path, to_fs_path

from plan_lsp.plan.text import (
    ends_with_line_break,
    final_line_break,
    only_line_break,
    with_line_breaks,
)

log = logging.getLogger(__name__)

# How long the server waits for the client's didChange to bring its copy to the text an
# applied edit should give, and for the client to catch up after a refused edit.
CONFIRM_WAIT_S = 3.0
# Once the client reported changes after an applied edit, how long a copy that differs from
# the expected text may stay quiet before it counts as settled elsewhere. Clients send the
# changes of one edit together or back to back (Neovim after its 150 ms debounce, eglot after
# its idle time, lsp-mode as a deletion then an insertion), so half a second of silence means
# no more are coming — much sooner than the whole confirmation wait.
SETTLED_QUIET_S = 0.5


class DiskWriter(Protocol):
    def __call__(self, path: Path, text: str, *, behind_buffer: bool = False) -> None: ...


@dataclass
class OpenDocument:
    uri: str
    path: Path | None
    version: int | None
    text: str
    # Bumped on every didChange; waiters watch it.
    generation: int = 0
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    # The client applied an edit somewhere else than expected: edits replace everything.
    whole_lines: bool = False
    # The text of a whole-document replacement in flight, to recognise the client's report.
    pending_full: str | None = None
    # An applied edit was never reported back: the copy cannot be trusted for edits.
    unconfirmed: bool = False
    closed: bool = False
    # The editor keeps a line break at the end of this buffer whatever an edit leaves there
    # (Vim, Neovim): learnt from its report of the first edit that ended mid-line.
    keeps_final_line_break: bool = False
    # The file's time (ns) when the editor last read or wrote it with this text, if known.
    known_mtime: int | None = None

    def as_held(self, text: str) -> str:
        """`text` as this buffer's editor holds it: CRLF where every line break of the
        buffer is CRLF (editors keep one style per buffer), and the final line break the
        editor keeps."""
        if only_line_break(self.text) == "\r\n":
            text = with_line_breaks(text, "\r\n")
        if self.keeps_final_line_break and text and not ends_with_line_break(text):
            text += final_line_break(self.text) or "\n"
        return text

    def bump(self) -> None:
        self.generation += 1
        self.changed.set()

    async def wait_for(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Wait until `predicate()` holds after some didChange (or already holds)."""

        async def _wait() -> None:
            while not predicate():
                self.changed.clear()
                await self.changed.wait()

        try:
            await asyncio.wait_for(_wait(), timeout)
        except TimeoutError:
            return predicate()
        return True


async def confirmed(doc: OpenDocument, mark: int, expected: str) -> bool:
    """Whether the client's reports bring the copy to `expected` (see `as_expected`): up to
    `CONFIRM_WAIT_S` for a first report, then until the reports go quiet."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + CONFIRM_WAIT_S
    while not as_expected(doc, expected):
        left = deadline - loop.time()
        if doc.generation != mark:
            left = min(left, SETTLED_QUIET_S)
        if left <= 0:
            return False
        seen = doc.generation
        if not await doc.wait_for(lambda seen=seen: doc.generation != seen, left):  # type: ignore[misc]
            return as_expected(doc, expected)
    return True


def as_expected(doc: OpenDocument, expected: str) -> bool:
    """The copy holds `expected`, or `expected` with the final line break its editor added
    (which teaches the document that its editor keeps one)."""
    if doc.text == expected:
        return True
    if ends_with_line_break(expected) or doc.text[: len(expected)] != expected:
        return False
    if doc.text[len(expected) :] in ("\n", "\r\n"):  # a final line break of its own
        if not doc.keeps_final_line_break:
            log.info("%s: the editor keeps a final line break", doc.uri)
        doc.keeps_final_line_break = True
        return True
    return False


def mtime_of(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


def path_of(uri: str) -> Path | None:
    fs = to_fs_path(uri)
    if not fs or "\x00" in fs:
        return None
    try:
        return Path(fs).resolve()
    except (OSError, RuntimeError, ValueError):
        return None


def uri_of(path: Path) -> str:
    return from_fs_path(str(path)) or path.as_uri()
