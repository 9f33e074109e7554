"""A small editor-like LSP client for the demo: it keeps buffers, applies edits the server
sends, opens documents it is asked to show, and answers prompts."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.uris import to_fs_path

from plan_lsp.plan.text import LineIndex
from plan_lsp.server.plain import to_plain


class DemoEditor:
    def __init__(self, on_update: Callable[[dict[str, Any]], None]) -> None:
        self.client = LanguageClient("plan-lsp-demo", "1")
        self.buffers: dict[str, tuple[str, int]] = {}
        self.edits_applied = 0
        self.on_update = on_update
        self.permission_answers: list[str] = []
        self._register()

    def _register(self) -> None:
        client = self.client

        @client.feature(types.WORKSPACE_APPLY_EDIT)
        def apply_edit(
            ls: LanguageClient, params: types.ApplyWorkspaceEditParams
        ) -> types.ApplyWorkspaceEditResult:
            for change in params.edit.document_changes or []:
                if not isinstance(change, types.TextDocumentEdit):
                    continue
                uri = change.text_document.uri
                if uri not in self.buffers:
                    return types.ApplyWorkspaceEditResult(applied=False)
                text, _version = self.buffers[uri]
                for e in sorted(
                    (e for e in change.edits if isinstance(e, types.TextEdit)),
                    key=lambda e: (e.range.start.line, e.range.start.character),
                    reverse=True,
                ):
                    index, (start, end) = LineIndex(text), (e.range.start, e.range.end)
                    text = (
                        text[: index.offset(start.line, start.character, "utf-16")]
                        + e.new_text
                        + text[index.offset(end.line, end.character, "utf-16") :]
                    )
                self._changed(uri, text)
                self.edits_applied += 1
            return types.ApplyWorkspaceEditResult(applied=True)

        @client.feature(types.WINDOW_SHOW_DOCUMENT)
        def show_document(
            ls: LanguageClient, params: types.ShowDocumentParams
        ) -> types.ShowDocumentResult:
            self.open(params.uri)
            return types.ShowDocumentResult(success=True)

        @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
        def message_request(
            ls: LanguageClient, params: types.ShowMessageRequestParams
        ) -> types.MessageActionItem | None:
            titles = [a.title for a in params.actions or []]
            answer = "Allow once" if "Allow once" in titles else (titles[0] if titles else None)
            if answer:
                self.permission_answers.append(f"{params.message} → {answer}")
            return types.MessageActionItem(title=answer) if answer else None

        @client.feature(types.WINDOW_SHOW_MESSAGE)
        def show_message(ls: LanguageClient, params: types.ShowMessageParams) -> None:
            self.on_update({"kind": "message", "message": params.message})

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
            self.on_update(to_plain(params))

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

    def _changed(self, uri: str, new_text: str) -> None:
        old, version = self.buffers[uri]
        end = LineIndex(old).position(len(old), "utf-16")
        self.buffers[uri] = (new_text, version + 1)
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version + 1),
                content_changes=[
                    types.TextDocumentContentChangePartial(
                        range=types.Range(
                            start=types.Position(line=0, character=0),
                            end=types.Position(line=end.line, character=end.character),
                        ),
                        text=new_text,
                    )
                ],
            )
        )

    def text(self, uri: str) -> str | None:
        buf = self.buffers.get(uri)
        return buf[0] if buf else None

    async def request(self, method: str, params: dict[str, Any], timeout: float = 120) -> Any:
        result = await asyncio.wait_for(
            self.client.protocol.send_request_async(method, params), timeout
        )
        return to_plain(result)

    async def code_lenses(self, uri: str) -> list[types.CodeLens]:
        lenses = await self.client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        return list(lenses or [])

    async def execute(self, command: types.Command) -> Any:
        result = await self.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=command.command, arguments=command.arguments)
        )
        return to_plain(result)
