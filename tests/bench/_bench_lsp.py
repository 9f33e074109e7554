# pygls' client-side decorators and stop() are untyped.
# mypy: disallow-untyped-decorators=False, disallow-untyped-calls=False
"""An editor-like stdio client for the benchmarks.

Like a real editor it keeps the buffers it was asked to show, applies `workspace/applyEdit`
to them and sends the same change back as an incremental `didChange`. It records when each
edit arrived (`time.monotonic()`, comparable with the instrumented server's clock) and the
`planLsp/update` notifications.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.uris import to_fs_path

from plan_lsp.server.plain import to_plain

INSTRUMENTED_SERVER = Path(__file__).resolve().parent / "_instrumented_server.py"


def offset_of(text: str, pos: types.Position) -> int:
    """LSP position (line, UTF-16 column) → code-point offset in `text`."""
    offset = 0
    for _ in range(pos.line):
        newline = text.find("\n", offset)
        if newline < 0:
            return len(text)
        offset = newline + 1
    units = 0
    index = offset
    while index < len(text) and units < pos.character and text[index] != "\n":
        units += 2 if ord(text[index]) > 0xFFFF else 1
        index += 1
    return index


@dataclass
class EditArrival:
    at: float
    text_chars: int
    text_bytes: int
    params: types.ApplyWorkspaceEditParams


@dataclass
class BenchEditor:
    client: LanguageClient
    buffers: dict[str, tuple[str, int]] = field(default_factory=dict)
    edits: list[EditArrival] = field(default_factory=list)
    updates: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    done: asyncio.Event = field(default_factory=asyncio.Event)

    async def request(self, method: str, params: Any = None, timeout: float = 120) -> Any:
        result = await asyncio.wait_for(
            self.client.protocol.send_request_async(method, params or {}), timeout
        )
        return to_plain(result)

    def text(self, uri: str) -> str | None:
        buf = self.buffers.get(uri)
        return buf[0] if buf else None

    def open(self, uri: str) -> None:
        if uri in self.buffers:
            return
        path = Path(to_fs_path(uri) or "")
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        self.buffers[uri] = (text, 1)
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id="markdown", version=1, text=text
                )
            )
        )

    def apply(self, params: types.ApplyWorkspaceEditParams) -> bool:
        for change in params.edit.document_changes or []:
            if not isinstance(change, types.TextDocumentEdit):
                return False
            uri = change.text_document.uri
            if uri not in self.buffers:
                return False
            text, version = self.buffers[uri]
            if change.text_document.version not in (None, version):
                return False
            changes: list[types.TextDocumentContentChangeEvent] = []
            for edit in change.edits:
                if not isinstance(edit, types.TextEdit):
                    return False
                start = offset_of(text, edit.range.start)
                end = offset_of(text, edit.range.end)
                text = text[:start] + edit.new_text + text[end:]
                # Edits in one TextDocumentEdit do not overlap and are sent in order; a real
                # editor reports each as its own incremental change.
                changes.append(
                    types.TextDocumentContentChangePartial(range=edit.range, text=edit.new_text)
                )
            self.buffers[uri] = (text, version + 1)
            self.client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    text_document=types.VersionedTextDocumentIdentifier(
                        uri=uri, version=version + 1
                    ),
                    content_changes=changes,
                )
            )
        return True

    def wire_bytes(self, params: types.ApplyWorkspaceEditParams) -> int:
        """Size of the JSON `params` object of one applyEdit message."""
        plain = self.client.protocol._converter.unstructure(params)
        return len(json.dumps(plain, separators=(",", ":")).encode("utf-8"))


def _register(editor: BenchEditor) -> None:
    client = editor.client

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(
        ls: LanguageClient, params: types.ApplyWorkspaceEditParams
    ) -> types.ApplyWorkspaceEditResult:
        now = time.monotonic()
        new_texts = [
            e.new_text
            for change in params.edit.document_changes or []
            if isinstance(change, types.TextDocumentEdit)
            for e in change.edits
            if not isinstance(e, types.SnippetTextEdit)
        ]
        editor.edits.append(
            EditArrival(
                at=now,
                text_chars=sum(len(t) for t in new_texts),
                text_bytes=sum(len(t.encode("utf-8")) for t in new_texts),
                params=params,
            )
        )
        return types.ApplyWorkspaceEditResult(applied=editor.apply(params))

    @client.feature(types.WINDOW_SHOW_DOCUMENT)
    def show_document(
        ls: LanguageClient, params: types.ShowDocumentParams
    ) -> types.ShowDocumentResult:
        editor.open(params.uri)
        return types.ShowDocumentResult(success=True)

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def message_request(ls: LanguageClient, params: types.ShowMessageRequestParams) -> None:
        return None

    @client.feature(types.WINDOW_SHOW_MESSAGE)
    def show_message(ls: LanguageClient, params: types.ShowMessageParams) -> None:
        return None

    @client.feature(types.WINDOW_LOG_MESSAGE)
    def log_message(ls: LanguageClient, params: types.LogMessageParams) -> None:
        return None

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def diagnostics(ls: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        return None

    @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def lens_refresh(ls: LanguageClient, params: Any) -> None:
        return None

    @client.feature("planLsp/update")
    def update(ls: LanguageClient, params: Any) -> None:
        plain = to_plain(params)
        editor.updates.append((time.monotonic(), plain))
        if plain.get("kind") == "done":
            editor.done.set()


def write_script(path: Path, turns: list[dict[str, Any]], chunk: int = 16) -> Path:
    path.write_text(json.dumps({"chunk": chunk, "turns": turns}), encoding="utf-8")
    return path


@asynccontextmanager
async def bench_server(
    workspace: Path, script: Path, *extra_args: str
) -> AsyncIterator[BenchEditor]:
    """The instrumented server over stdio with the scripted provider, initialized."""
    editor = BenchEditor(LanguageClient("plan-lsp-bench", "1"))
    _register(editor)
    await editor.client.start_io(
        sys.executable,
        str(INSTRUMENTED_SERVER),
        "serve",
        "--provider",
        "scripted",
        "--script",
        str(script),
        "--log-level",
        "warning",
        *extra_args,
    )
    try:
        await asyncio.wait_for(
            editor.client.initialize_async(
                types.InitializeParams(
                    capabilities=types.ClientCapabilities(
                        workspace=types.WorkspaceClientCapabilities(
                            apply_edit=True,
                            workspace_edit=types.WorkspaceEditClientCapabilities(
                                document_changes=True
                            ),
                        ),
                        window=types.WindowClientCapabilities(
                            show_document=types.ShowDocumentClientCapabilities(support=True)
                        ),
                        experimental={"planLsp": {}},
                    ),
                    workspace_folders=[
                        types.WorkspaceFolder(uri=workspace.as_uri(), name=workspace.name)
                    ],
                )
            ),
            60,
        )
        editor.client.initialized(types.InitializedParams())
        yield editor
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(editor.client.shutdown_async(None), 10)
            editor.client.exit(None)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(editor.client.stop(), 10)
