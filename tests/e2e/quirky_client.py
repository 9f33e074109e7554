"""Scripted LSP clients with the habits real editors ship with, run against the real server.

`Quirks` describes one client: which position encoding it offers and counts in (or miscounts
in, as lsp-mode 8 counts characters while claiming UTF-16), whether it debounces `didChange`
(Neovim's default 150 ms, eglot's idle timer), how it answers `workspace/applyEdit` (late,
after its own `didChange`; what it does with an edit for an older version), which document
versions it sends (0, null, jumps), which capabilities it declares (`showDocument`,
`workDoneProgress`, `experimental.planLsp`) and how it names itself, whether a file an edit
names is opened or only loaded into a hidden buffer (lsp-mode with `lsp-deferred`), and
whether it reads the server's output as Emacs does: in chunks, losing (lsp-mode) or leaving
unread until more arrives (eglot 1.9) what follows the answer to one of its requests in the
same chunk. Everything the server sends is recorded.

Document notifications are written as raw JSON so a client can send what real clients send,
including what lsprotocol would not produce (a `null` version)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from lsprotocol import types
from pygls.io_ import run_async
from pygls.protocol import default_converter
from pygls.uris import to_fs_path
from pytest_lsp import LanguageClient
from pytest_lsp.client import forward_stderr

from plan_lsp.server.plain import to_plain
from tests.lsp_harness import SERVER_CMD, Editor, stop_client

Encoding = Literal["utf-8", "utf-16", "utf-32"]


# -- positions in a client's units ---------------------------------------------------------


def char_units(ch: str, encoding: Encoding) -> int:
    if encoding == "utf-8":
        return len(ch.encode("utf-8", "surrogatepass"))
    if encoding == "utf-16":
        return 2 if ord(ch) > 0xFFFF else 1
    return 1


def offset_at(text: str, line: int, column: int, encoding: Encoding) -> int:
    """The str offset of (line, column in `encoding` units); past the end clamps, as editors do."""
    starts = [0]
    for i, ch in enumerate(text):
        if ch == "\n":
            starts.append(i + 1)
    if line >= len(starts):
        return len(text)
    offset = starts[line]
    end = starts[line + 1] - 1 if line + 1 < len(starts) else len(text)
    units = 0
    while offset < end and units < column:
        units += char_units(text[offset], encoding)
        offset += 1
    return offset


def position_of(text: str, offset: int, encoding: Encoding) -> dict[str, int]:
    head = text[:offset]
    line_start = head.rfind("\n") + 1
    column = sum(char_units(ch, encoding) for ch in head[line_start:])
    return {"line": head.count("\n"), "character": column}


def span_text(text: str, rng: types.Range, encoding: Encoding) -> str:
    start = offset_at(text, rng.start.line, rng.start.character, encoding)
    end = offset_at(text, rng.end.line, rng.end.character, encoding)
    return text[start:end]


# -- the client ----------------------------------------------------------------------------

StaleEdit = Literal["refuse", "error", "drop"]


@dataclass
class Quirks:
    # Offered in general.positionEncodings (utf-16 offers nothing: the LSP default).
    encoding: Encoding = "utf-16"
    # Counts columns in characters whatever was negotiated (lsp-mode 8).
    columns_in_characters: bool = False
    # None: one didChange per applied edit, at once. Else one coalesced didChange this many
    # seconds after the last buffer change (Neovim: 0.15, eglot: 0.5 of idle time).
    debounce_s: float | None = None
    # The applyEdit answer is sent after the didChange it caused, this much later.
    answer_late_s: float | None = None
    # An edit for a version older than the buffer's: "refuse" (applied: false, VS Code),
    # "error" (a JSON-RPC error, eglot), "drop" (not applied, answered applied: true,
    # Neovim's "Buffer newer than edits").
    stale_edit: StaleEdit = "refuse"
    # Versions sent in didOpen/didChange: "normal" (1, 2, …), "zero" (always 0, and edits
    # for version 0 are applied unchecked, like lsp-mode), "null", "jumps" (+7 per change).
    versions: Literal["normal", "zero", "null", "jumps"] = "normal"
    # window.showDocument: "yes" (declared, shown), "absent" (not declared; answered null if
    # asked anyway, as both Emacs clients do), "null" (declared, answered null).
    show_document: Literal["yes", "absent", "null"] = "yes"
    plan_lsp: bool = True
    work_done_progress: bool = True
    answer_progress_create: bool = True
    # clientInfo.name (lsp-mode: "emacs"; eglot 1.9 sends none) and whether any window
    # capability is declared (eglot 1.9 declares none).
    client_name: str | None = None
    window: bool = True
    # A file an edit names is loaded into a buffer the client does not open (no didOpen):
    # lsp-mode with `lsp-deferred`, until the user shows the buffer.
    loads_without_opening: bool = False
    # Reads the server's output in chunks like Emacs; what follows an answer in the same
    # chunk is "drop"ped (lsp-mode) or "strand"ed until the next chunk (eglot 1.9).
    after_answer: Literal["drop", "strand"] | None = None
    # How the buffer holds text: "text" (VS Code, Emacs: exactly the characters) or "lines"
    # (Vim, Neovim: a list of lines, always written and reported with a final line break, so
    # an empty file is "\n"; edits applied as Neovim's `apply_text_edits` does, including its
    # handling of a range past the last line).
    line_model: Literal["text", "lines"] = "text"
    # The buffer keeps one line-break style: text an edit inserts gets the buffer's (VS Code's
    # model EOL, Vim's 'fileformat').
    one_line_break: bool = False
    # An edit to a buffer whose file changed on disk since the buffer read it rereads the
    # file first (Emacs's "changed on disk; reread?" answered yes, as `find-file-noselect`
    # does for eglot and lsp-mode): didClose, then didOpen with the disk's text and a fresh
    # version; the edit then meets the reopened buffer's version.
    rereads_changed_file: bool = False


@dataclass
class ClientBuffer:
    uri: str
    text: str
    version: int
    pending: list[dict[str, Any]] = field(default_factory=list)  # changes not yet sent
    flush: asyncio.TimerHandle | None = None
    # The file's text when the buffer read it.
    disk_seen: str | None = None


@dataclass
class HiddenBuffer:
    """A file loaded for an edit and never opened: the text it holds, and the disk's text
    when it was loaded (Emacs asks "changed on disk" if that changes behind it)."""

    text: str
    disk_at_load: str | None


@dataclass
class Received:
    """Everything the server sent, in order: (method, params) pairs."""

    requests: list[tuple[str, Any]] = field(default_factory=list)
    notifications: list[tuple[str, Any]] = field(default_factory=list)
    edit_answers: list[dict[str, Any]] = field(default_factory=list)

    def of(self, method: str) -> list[Any]:
        return [p for m, p in self.requests + self.notifications if m == method]


class QuirkyEditor:
    def __init__(self, client: LanguageClient, quirks: Quirks, root: Path) -> None:
        self.client = client
        self.quirks = quirks
        self.root = root
        self.buffers: dict[str, ClientBuffer] = {}
        self.received = Received()
        self.changed = asyncio.Event()  # a notification or request arrived
        self.settled = asyncio.Event()  # no didChange pending
        self.settled.set()
        self.released = asyncio.Event()  # lets unanswered requests end at teardown
        self.answer_message: str | None = None  # the showMessageRequest action to pick
        self.encoding: Encoding = "utf-16"  # what the server chose
        self.init_result: types.InitializeResult | None = None
        self.hidden: dict[str, HiddenBuffer] = {}
        self.questions: list[str] = []  # what the editor would have asked the user
        # Every text each buffer held, with the wall-clock time it changed: what a user saw.
        self.history: dict[str, list[tuple[float, str]]] = {}

    # -- what the client counts in -------------------------------------------------------

    @property
    def units(self) -> Encoding:
        return "utf-32" if self.quirks.columns_in_characters else self.encoding

    # -- raw notifications ----------------------------------------------------------------

    def _send(self, method: str, params: dict[str, Any]) -> None:
        self.client.protocol._send_data({"jsonrpc": "2.0", "method": method, "params": params})

    def _wire_version(self, buf: ClientBuffer) -> int | None:
        if self.quirks.versions == "zero":
            return 0
        if self.quirks.versions == "null":
            return None
        return buf.version

    def _bump(self, buf: ClientBuffer) -> None:
        buf.version += 7 if self.quirks.versions == "jumps" else 1

    def open(self, path: Path, text: str | None = None) -> ClientBuffer:
        uri = path.resolve().as_uri()
        hidden = self.hidden.pop(uri, None)
        if hidden is not None and text is None:
            # The user shows a buffer loaded earlier: Emacs checks the disk first.
            if _disk(path) != hidden.disk_at_load:
                self.questions.append(f"{path.name} changed on disk; really edit the buffer?")
            text = hidden.text
        if text is None:
            text = path.read_bytes().decode("utf-8") if path.exists() else ""
        if self.quirks.line_model == "lines" and not text.endswith("\n"):
            text += "\n"  # the final line break Vim and Neovim keep ("\n" for an empty file)
        buf = ClientBuffer(uri, text, 1, disk_seen=_disk(path))
        self.buffers[uri] = buf
        version = self._wire_version(buf)
        self._send(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": uri,
                    "languageId": "markdown" if path.suffix == ".md" else "python",
                    "version": 0 if version is None else version,
                    "text": text,
                }
            },
        )
        return buf

    def _record_change(self, buf: ClientBuffer, start: int, end: int, new: str) -> None:
        """The buffer changed (an applied edit, or typing); tell the server now or later."""
        old = buf.text
        change = {
            "range": {
                "start": position_of(old, start, self.units),
                "end": position_of(old, end, self.units),
            },
            "text": new,
        }
        buf.text = old[:start] + new + old[end:]
        self.history.setdefault(buf.uri, []).append((time.time(), buf.text))
        self._bump(buf)
        buf.pending.append(change)
        if self.quirks.debounce_s is None:
            self._flush(buf)
            return
        self.settled.clear()
        if buf.flush is not None:
            buf.flush.cancel()
        buf.flush = asyncio.get_running_loop().call_later(self.quirks.debounce_s, self._flush, buf)

    def _flush(self, buf: ClientBuffer) -> None:
        buf.flush = None
        if buf.pending:
            changes, buf.pending = buf.pending, []
            self._send(
                "textDocument/didChange",
                {
                    "textDocument": {"uri": buf.uri, "version": self._wire_version(buf)},
                    "contentChanges": changes,
                },
            )
        if all(b.flush is None for b in self.buffers.values()):
            self.settled.set()

    def type_into(self, path: Path, new_text: str) -> None:
        """The user replaces the whole buffer (unsaved)."""
        buf = self.buffers[path.resolve().as_uri()]
        self._record_change(buf, 0, len(buf.text), new_text)

    def text(self, path: Path) -> str | None:
        buf = self.buffers.get(path.resolve().as_uri())
        return buf.text if buf else None

    # -- requests to the server ----------------------------------------------------------

    # the same requests as the plain test editor's (they only use `self.client`)
    request = Editor.request
    command = Editor.command

    async def settle(self, timeout: float = 10) -> None:
        """Until every debounced didChange has been sent."""
        await asyncio.wait_for(self.settled.wait(), timeout)

    async def wait_for(self, what: str, pred: Any, timeout: float = 30) -> Any:
        async def _wait() -> Any:
            while True:
                self.changed.clear()
                found = pred()
                if found:
                    return found
                await self.changed.wait()

        try:
            return await asyncio.wait_for(_wait(), timeout)
        except TimeoutError:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}") from None

    def updates(self, kind: str | None = None) -> list[dict[str, Any]]:
        return [
            u for u in self.received.of("planLsp/update") if kind is None or u.get("kind") == kind
        ]

    # -- applying edits like an editor ----------------------------------------------------

    def _load(self, uri: str) -> ClientBuffer | HiddenBuffer:
        """Neovim and Emacs load a file an edit names into a buffer; Neovim tells the server,
        lsp-mode (with `lsp-deferred`) does not until the buffer is shown."""
        path = Path(to_fs_path(uri) or "")
        if self.quirks.loads_without_opening:
            disk = _disk(path)
            return self.hidden.setdefault(uri, HiddenBuffer(disk or "", disk))
        return self.open(path)

    def _reread(self, buf: ClientBuffer) -> ClientBuffer:
        """`rereads_changed_file`: the buffer again, from disk, if its file changed."""
        path = Path(to_fs_path(buf.uri) or "")
        disk = _disk(path)
        if disk is None or disk == buf.disk_seen:
            return buf
        self.questions.append(f"{path.name} changed on disk; reread it?")
        if buf.flush is not None:
            buf.flush.cancel()
        self._send("textDocument/didClose", {"textDocument": {"uri": buf.uri}})
        del self.buffers[buf.uri]
        if all(b.flush is None for b in self.buffers.values()):
            self.settled.set()
        return self.open(path)

    def _stale(self, buf: ClientBuffer, version: int | None) -> bool:
        if version is None:
            return False
        if self.quirks.versions in ("zero", "null") and version == 0:
            return False  # lsp-mode: version 0 means "unversioned"
        return version != buf.version

    def apply_workspace_edit(self, edit: types.WorkspaceEdit) -> dict[str, Any]:
        changes: list[tuple[str, int | None, list[types.TextEdit]]] = []
        for change in edit.document_changes or []:
            if not isinstance(change, types.TextDocumentEdit):
                return {"applied": False, "failureReason": f"unsupported {type(change).__name__}"}
            edits = [e for e in change.edits if isinstance(e, types.TextEdit)]
            changes.append((change.text_document.uri, change.text_document.version, edits))
        for uri, text_edits in (edit.changes or {}).items():
            changes.append((uri, None, list(text_edits)))
        for uri, version, edits in changes:
            buf = self.buffers.get(uri) or self.hidden.get(uri) or self._load(uri)
            if isinstance(buf, HiddenBuffer):
                for e in sorted(
                    edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True
                ):
                    start = offset_at(
                        buf.text, e.range.start.line, e.range.start.character, self.units
                    )
                    end = offset_at(buf.text, e.range.end.line, e.range.end.character, self.units)
                    buf.text = buf.text[:start] + e.new_text + buf.text[end:]
                continue
            if self.quirks.rereads_changed_file:
                buf = self._reread(buf)
            if self._stale(buf, version):
                reason = f"version {version} != {buf.version}"
                if self.quirks.stale_edit == "refuse":
                    return {"applied": False, "failureReason": reason}
                if self.quirks.stale_edit == "error":
                    raise ValueError(f"Edits require version {version}, you have {buf.version}")
                continue  # "drop": Neovim prints "Buffer newer than edits" and says applied
            spans = sorted(
                (
                    (
                        offset_at(
                            buf.text, e.range.start.line, e.range.start.character, self.units
                        ),
                        offset_at(buf.text, e.range.end.line, e.range.end.character, self.units),
                        e.new_text,
                    )
                    for e in edits
                ),
                reverse=True,
            )
            if self.quirks.line_model == "lines":
                self._apply_as_lines(buf, edits)
                continue
            for start, end, new in spans:
                if self.quirks.one_line_break:
                    new = _with_break(new, _break_of(buf.text))
                self._record_change(buf, start, end, new)
        return {"applied": True}

    def _apply_as_lines(self, buf: ClientBuffer, edits: list[types.TextEdit]) -> None:
        """Neovim's `vim.lsp.util.apply_text_edits` on a buffer of lines with 'eol' set,
        reported as one change (Neovim reports what changed, not the edit it was sent)."""
        crlf = buf.text.endswith("\r\n")
        eol = "\r\n" if crlf else "\n"
        lines = buf.text[: -len(eol)].split(eol)
        has_eol_edit = False
        for e in sorted(
            edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True
        ):
            new = re.sub("\r\n?", "\n", e.new_text).split("\n")
            start_row, end_row = e.range.start.line, e.range.end.line
            start_col = _column(lines, start_row, e.range.start.character, self.units)
            end_col = _column(lines, end_row, e.range.end.character, self.units)
            count = len(lines)
            if count <= start_row:
                lines[count:count] = new  # appended as lines, its final "" included
                continue
            if count <= end_row:
                end_row, end_col, has_eol_edit = count - 1, len(lines[count - 1]), True
            elif (
                end_col >= len(lines[end_row])
                and e.range.end.character > end_col
                and e.new_text.endswith("\n")
            ):
                new.pop()
            end_col = min(len(lines[end_row]), end_col)
            head, tail = lines[start_row][:start_col], lines[end_row][end_col:]
            new[0] = head + new[0]
            new[-1] += tail
            lines[start_row : end_row + 1] = new
        if has_eol_edit and len(lines) > 1 and lines[-1] == "":
            lines.pop()
        text = eol.join(lines) + eol
        old = buf.text
        prefix = 0
        while prefix < min(len(old), len(text)) and old[prefix] == text[prefix]:
            prefix += 1
        suffix = 0
        while (
            suffix < min(len(old), len(text)) - prefix
            and old[len(old) - 1 - suffix] == text[len(text) - 1 - suffix]
        ):
            suffix += 1
        if old != text:
            self._record_change(buf, prefix, len(old) - suffix, text[prefix : len(text) - suffix])


def _column(lines: list[str], row: int, units: int, encoding: Encoding) -> int:
    """The str index in line `row` of a column counted in `encoding` (past the end: its end)."""
    if row >= len(lines):
        return 0
    line, index, counted = lines[row], 0, 0
    while index < len(line) and counted < units:
        counted += char_units(line[index], encoding)
        index += 1
    return index


def _break_of(text: str) -> str:
    found = re.search("\r\n|\r|\n", text)
    return found.group() if found else "\n"


def _with_break(text: str, style: str) -> str:
    return re.sub("\r\n|\r|\n", lambda _m: style, text)


def _disk(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None


def _capabilities(q: Quirks) -> dict[str, Any]:
    window: dict[str, Any] = {"workDoneProgress": q.work_done_progress}
    if q.show_document != "absent":
        window["showDocument"] = {"support": True}
    caps: dict[str, Any] = {
        "workspace": {
            "applyEdit": True,
            "workspaceEdit": {"documentChanges": True},
            "workspaceFolders": True,
        },
        "textDocument": {"synchronization": {"didSave": True}},
    }
    if q.window:
        caps["window"] = window
    if q.encoding != "utf-16":
        caps["general"] = {"positionEncodings": [q.encoding]}
    if q.plan_lsp:
        caps["experimental"] = {"planLsp": {}}
    return caps


def _register(ed: QuirkyEditor) -> None:
    client, q, rec = ed.client, ed.quirks, ed.received

    def note(kind: list[tuple[str, Any]], method: str, params: Any) -> None:
        kind.append((method, to_plain(params)))
        ed.changed.set()

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    async def apply_edit(client: LanguageClient, params: types.ApplyWorkspaceEditParams) -> Any:
        note(rec.requests, types.WORKSPACE_APPLY_EDIT, params)
        try:
            answer = ed.apply_workspace_edit(params.edit)
        except ValueError as exc:
            rec.edit_answers.append({"error": str(exc)})
            raise
        if q.answer_late_s is not None:
            for buf in ed.buffers.values():  # the didChange goes first
                if buf.flush is not None:
                    buf.flush.cancel()
                    ed._flush(buf)
            await asyncio.sleep(q.answer_late_s)
        rec.edit_answers.append(answer)
        return types.ApplyWorkspaceEditResult(
            applied=answer["applied"], failure_reason=answer.get("failureReason")
        )

    @client.feature(types.WINDOW_SHOW_DOCUMENT)
    def show_document(client: LanguageClient, params: types.ShowDocumentParams) -> Any:
        note(rec.requests, types.WINDOW_SHOW_DOCUMENT, params)
        if q.show_document != "yes":
            return None
        if params.uri not in ed.buffers:
            ed._load(params.uri)
        return types.ShowDocumentResult(success=True)

    @client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
    async def progress_create(client: LanguageClient, params: Any) -> None:
        note(rec.requests, types.WINDOW_WORK_DONE_PROGRESS_CREATE, params)
        if not q.answer_progress_create:
            await ed.released.wait()  # never answered while the test runs

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def show_message_request(client: LanguageClient, params: Any) -> Any:
        note(rec.requests, types.WINDOW_SHOW_MESSAGE_REQUEST, params)
        if ed.answer_message is None:
            return None
        return types.MessageActionItem(title=ed.answer_message)

    @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def lens_refresh(client: LanguageClient, params: Any) -> None:
        note(rec.requests, types.WORKSPACE_CODE_LENS_REFRESH, params)

    @client.feature(types.WORKSPACE_WORKSPACE_FOLDERS)
    def workspace_folders(client: LanguageClient, params: Any) -> Any:
        note(rec.requests, types.WORKSPACE_WORKSPACE_FOLDERS, params)
        return [types.WorkspaceFolder(uri=ed.root.resolve().as_uri(), name=ed.root.name)]

    for method in (
        "planLsp/update",
        types.PROGRESS,
        types.WINDOW_LOG_MESSAGE,
        types.WINDOW_SHOW_MESSAGE,
        types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS,
    ):

        def on_notification(client: LanguageClient, params: Any, _m: str = method) -> None:
            note(rec.notifications, _m, params)

        client.feature(method)(on_notification)

    for method in ("planLsp/requestPermission", "planLsp/askUser"):

        def on_custom(client: LanguageClient, params: Any, _m: str = method) -> None:
            note(rec.requests, _m, params)

        client.feature(method)(on_custom)


# -- reading like Emacs --------------------------------------------------------------------

# How long the emulated Emacs is busy between reads: what the server writes meanwhile comes
# in one chunk (the answer to a request and the messages right behind it, typically).
BUSY_S = 0.1
_FRAME = re.compile(rb"Content-Length: (\d+)\r\n(?:[A-Za-z-]+: [^\r\n]*\r\n)*\r\n")


class EmacsReads:
    """The server's stdout as Emacs's process filters see it: one chunk at a time, every
    complete message in it dispatched in order; once an answer to one of the client's
    requests has been dispatched, the rest of the chunk's complete messages are dropped
    (lsp-mode's `lsp-request` throws out of its filter) or stranded until the next chunk
    arrives (eglot 1.9's jsonrpc keeps them in the process buffer). `run_async` reads
    through `readline`/`readexactly`."""

    def __init__(self, raw: asyncio.StreamReader, habit: Literal["drop", "strand"]) -> None:
        self.raw = raw
        self.habit = habit
        self.buf = bytearray()
        self.after_answer = False
        self.lost: list[dict[str, Any]] = []

    async def _chunk(self) -> bool:
        data = await self.raw.read(1 << 16)
        if not data:
            return False
        # Not a race to win: the emulated editor is busy, so the server's next messages
        # reach this read, as they reach Emacs's after a command.
        await asyncio.sleep(BUSY_S)
        buffered: bytearray = getattr(self.raw, "_buffer")  # noqa: B009 - what is already there
        while buffered:
            data += await self.raw.read(1 << 16)
        self.buf += data
        return True

    async def _settle(self) -> None:
        if not self.after_answer:
            return
        self.after_answer = False
        complete = 0
        while (m := _FRAME.match(self.buf, complete)) and m.end() + int(m.group(1)) <= len(
            self.buf
        ):
            complete = m.end() + int(m.group(1))
        if not complete:
            return
        if self.habit == "drop":
            for m in _FRAME.finditer(self.buf[:complete]):
                body = bytes(self.buf[m.end() : m.end() + int(m.group(1))])
                self.lost.append(json.loads(body))
            del self.buf[:complete]
        else:
            await self._chunk()  # stranded until something else arrives

    async def readline(self) -> bytes:
        await self._settle()
        while b"\n" not in self.buf:
            if not await self._chunk():
                return b""
        end = self.buf.index(b"\n") + 1
        line = bytes(self.buf[:end])
        del self.buf[:end]
        return line

    async def readexactly(self, n: int) -> bytes:
        while len(self.buf) < n:
            if not await self._chunk():
                raise asyncio.IncompleteReadError(bytes(self.buf), n)
        body = bytes(self.buf[:n])
        del self.buf[:n]
        message = json.loads(body)
        self.after_answer = "id" in message and "method" not in message
        return body


class EmacsLikeClient(LanguageClient):
    """A pytest-lsp client whose reads go through `EmacsReads`."""

    def __init__(self, habit: Literal["drop", "strand"], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.habit = habit
        self.reads: EmacsReads | None = None

    async def start_io(self, cmd: str, *args: Any, **kwargs: Any) -> None:
        pipe = asyncio.subprocess.PIPE
        server = await asyncio.create_subprocess_exec(
            cmd, *args, stdin=pipe, stdout=pipe, stderr=pipe, **kwargs
        )
        assert server.stdout is not None and server.stdin is not None
        self.reads = EmacsReads(server.stdout, self.habit)
        self.protocol.set_writer(server.stdin)
        connection = asyncio.create_task(
            run_async(
                stop_event=self._stop_event,
                reader=self.reads,
                protocol=self.protocol,
                logger=logging.getLogger(__name__),
                error_handler=self.report_server_error,
            )
        )
        self._server = server
        self._async_tasks.extend([connection, asyncio.create_task(self._server_exit())])
        self._stderr_forwarder = asyncio.create_task(forward_stderr(server))


@asynccontextmanager
async def quirky_server(
    root: Path, quirks: Quirks, *extra_args: str, env: dict[str, str] | None = None
) -> AsyncIterator[QuirkyEditor]:
    client = (
        EmacsLikeClient(quirks.after_answer, converter_factory=default_converter)
        if quirks.after_answer
        else LanguageClient(converter_factory=default_converter)
    )
    ed = QuirkyEditor(client, quirks, root)
    _register(ed)
    await client.start_io(*SERVER_CMD, *extra_args, env={**os.environ, **(env or {})})
    init: dict[str, Any] = {
        "processId": os.getpid(),
        "capabilities": _capabilities(quirks),
        "workspaceFolders": [{"uri": root.resolve().as_uri(), "name": root.name}],
    }
    if quirks.client_name is not None:
        init["clientInfo"] = {"name": quirks.client_name}
    params = default_converter().structure(init, types.InitializeParams)
    ed.init_result = await asyncio.wait_for(client.initialize_session(params), 60)
    chosen = ed.init_result.capabilities.position_encoding
    ed.encoding = str(getattr(chosen, "value", chosen) or "utf-16")  # type: ignore[assignment]
    try:
        yield ed
    finally:
        ed.released.set()
        await stop_client(client)


def elapsed_since(start: float) -> float:
    return time.monotonic() - start
