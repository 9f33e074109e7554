"""A pytest-lsp client that behaves like an editor: it keeps buffers, applies
`workspace/applyEdit` to them (sending `didChange` back like a real editor), answers
prompts by a policy the test sets, and records `planLsp/update` notifications."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.protocol import default_converter
from pygls.uris import to_fs_path
from pytest_lsp import LanguageClient
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

from plan_lsp.server.plain import to_plain

SERVER_CMD = [sys.executable, "-m", "plan_lsp", "serve"]


def offset_of(text: str, pos: types.Position) -> int:
    """LSP position (UTF-16 code units) → str offset."""
    lines = text.split("\n")
    offset = sum(len(line) + 1 for line in lines[: pos.line])
    line = lines[pos.line] if pos.line < len(lines) else ""
    units = 0
    col = 0
    for ch in line:
        if units >= pos.character:
            break
        units += 2 if ord(ch) > 0xFFFF else 1
        col += 1
    return offset + col


def apply_text_edits(text: str, edits: list[types.TextEdit]) -> str:
    spans = sorted(
        ((offset_of(text, e.range.start), offset_of(text, e.range.end), e.new_text) for e in edits),
        reverse=True,
    )
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


@dataclass
class Buffer:
    uri: str
    text: str
    version: int = 1


@dataclass
class EditorState:
    buffers: dict[str, Buffer] = field(default_factory=dict)
    applied_edits: list[types.ApplyWorkspaceEditParams] = field(default_factory=list)
    refuse_edits: int = 0
    updates: list[dict[str, Any]] = field(default_factory=list)
    message_requests: list[types.ShowMessageRequestParams] = field(default_factory=list)
    permission_requests: list[dict[str, Any]] = field(default_factory=list)
    question_requests: list[dict[str, Any]] = field(default_factory=list)
    shown_documents: list[types.ShowDocumentParams] = field(default_factory=list)
    # policy callbacks
    answer_message: Callable[[types.ShowMessageRequestParams], str | None] = lambda p: None
    answer_permission: Callable[[dict[str, Any]], str] = lambda p: "reject_once"
    answer_questions: Callable[[dict[str, Any]], dict[str, Any] | None] = lambda p: None
    update_event: asyncio.Event = field(default_factory=asyncio.Event)
    # every publishDiagnostics: (uri, version)
    published: list[tuple[str, int | None]] = field(default_factory=list)
    published_event: asyncio.Event = field(default_factory=asyncio.Event)


class Editor:
    def __init__(self, client: LanguageClient, state: EditorState, root: Path) -> None:
        self.client = client
        self.ed = state
        self.root = root

    # -- requests --------------------------------------------------------------------------

    async def request(self, method: str, params: Any = None, timeout: float = 60) -> Any:
        result = await asyncio.wait_for(
            self.client.protocol.send_request_async(method, params or {}), timeout
        )
        return to_plain(result)

    async def command(self, name: str, *args: Any, timeout: float = 60) -> Any:
        result = await asyncio.wait_for(
            self.client.workspace_execute_command_async(
                types.ExecuteCommandParams(command=name, arguments=list(args))
            ),
            timeout,
        )
        return to_plain(result)

    async def state(self) -> dict[str, Any]:
        result: dict[str, Any] = await self.request("planLsp/state", {})
        return result

    async def settled_state(self) -> dict[str, Any]:
        """`planLsp/state` once the sandbox self-test has answered: until then `planShell`
        is null, and the server pushes the state when it knows."""
        state = await self.state()
        if state["planShell"] is None:
            await self.wait_update(
                lambda u: u.get("kind") == "state" and u["state"]["planShell"] is not None
            )
            state = await self.state()
        return state

    # -- buffers ---------------------------------------------------------------------------

    def open(self, path: Path, text: str | None = None) -> Buffer:
        uri = path.resolve().as_uri()
        if text is None:
            text = path.read_text() if path.exists() else ""
        buf = Buffer(uri, text)
        self.ed.buffers[uri] = buf
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id="markdown", version=buf.version, text=text
                )
            )
        )
        return buf

    def type_into(self, path: Path, new_text: str) -> None:
        """The user edits an open buffer (whole-text change)."""
        buf = self.ed.buffers[path.resolve().as_uri()]
        old = buf.text
        buf.text = new_text
        buf.version += 1
        end_line = old.count("\n")
        end_char = len(old.split("\n")[-1].encode("utf-16-le")) // 2
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(
                    uri=buf.uri, version=buf.version
                ),
                content_changes=[
                    types.TextDocumentContentChangePartial(
                        range=types.Range(
                            start=types.Position(line=0, character=0),
                            end=types.Position(line=end_line, character=end_char),
                        ),
                        text=new_text,
                    )
                ],
            )
        )

    def buffer_text(self, path: Path) -> str | None:
        buf = self.ed.buffers.get(path.resolve().as_uri())
        return buf.text if buf else None

    # -- updates ---------------------------------------------------------------------------

    async def wait_update(
        self, pred: Callable[[dict[str, Any]], bool], timeout: float = 60, start: int = 0
    ) -> dict[str, Any]:
        async def _wait() -> dict[str, Any]:
            seen = start
            while True:
                for upd in self.ed.updates[seen:]:
                    if pred(upd):
                        return upd
                seen = len(self.ed.updates)
                self.ed.update_event.clear()
                await self.ed.update_event.wait()

        return await asyncio.wait_for(_wait(), timeout)

    def updates_of(self, kind: str) -> list[dict[str, Any]]:
        return [u for u in self.ed.updates if u.get("kind") == kind]


def _register(client: LanguageClient, state: EditorState) -> None:
    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(
        client: LanguageClient, params: types.ApplyWorkspaceEditParams
    ) -> types.ApplyWorkspaceEditResult:
        state.applied_edits.append(params)
        if state.refuse_edits > 0:
            state.refuse_edits -= 1
            return types.ApplyWorkspaceEditResult(applied=False, failure_reason="test refusal")
        edit = params.edit
        for change in edit.document_changes or []:
            if not isinstance(change, types.TextDocumentEdit):
                return types.ApplyWorkspaceEditResult(applied=False, failure_reason="kind")
            buf = state.buffers.get(change.text_document.uri)
            if buf is None:
                return types.ApplyWorkspaceEditResult(applied=False, failure_reason="not open")
            expected = change.text_document.version
            if expected is not None and expected != buf.version:
                return types.ApplyWorkspaceEditResult(
                    applied=False, failure_reason=f"stale version {expected} != {buf.version}"
                )
            text_edits = [e for e in change.edits if isinstance(e, types.TextEdit)]
            new_text = apply_text_edits(buf.text, text_edits)
            _send_change(client, buf, new_text)
        for uri, edits in (edit.changes or {}).items():
            buf = state.buffers.get(uri)
            if buf is None:
                return types.ApplyWorkspaceEditResult(applied=False, failure_reason="not open")
            _send_change(client, buf, apply_text_edits(buf.text, list(edits)))
        return types.ApplyWorkspaceEditResult(applied=True)

    @client.feature(types.WINDOW_SHOW_DOCUMENT)
    def show_document(
        client: LanguageClient, params: types.ShowDocumentParams
    ) -> types.ShowDocumentResult:
        state.shown_documents.append(params)
        if params.uri not in state.buffers:
            path = Path(to_fs_path(params.uri) or "")
            text = path.read_text() if path.exists() else ""
            state.buffers[params.uri] = Buffer(params.uri, text)
            client.text_document_did_open(
                types.DidOpenTextDocumentParams(
                    text_document=types.TextDocumentItem(
                        uri=params.uri, language_id="markdown", version=1, text=text
                    )
                )
            )
        return types.ShowDocumentResult(success=True)

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def show_message_request(
        client: LanguageClient, params: types.ShowMessageRequestParams
    ) -> types.MessageActionItem | None:
        state.message_requests.append(params)
        title = state.answer_message(params)
        return types.MessageActionItem(title=title) if title is not None else None

    @client.feature("planLsp/update")
    def on_update(client: LanguageClient, params: Any) -> None:
        state.updates.append(to_plain(params))
        state.update_event.set()

    @client.feature("planLsp/requestPermission")
    def on_permission(client: LanguageClient, params: Any) -> dict[str, Any]:
        p = to_plain(params)
        state.permission_requests.append(p)
        return {"optionId": state.answer_permission(p)}

    @client.feature("planLsp/askUser")
    def on_ask(client: LanguageClient, params: Any) -> dict[str, Any] | None:
        p = to_plain(params)
        state.question_requests.append(p)
        answers = state.answer_questions(p)
        return None if answers is None else {"answers": answers}


def _send_change(client: LanguageClient, buf: Buffer, new_text: str) -> None:
    old = buf.text
    buf.text = new_text
    buf.version += 1
    end_line = old.count("\n")
    end_char = len(old.split("\n")[-1].encode("utf-16-le")) // 2
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=buf.uri, version=buf.version),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(
                        start=types.Position(line=0, character=0),
                        end=types.Position(line=end_line, character=end_char),
                    ),
                    text=new_text,
                )
            ],
        )
    )


def client_caps(
    permission_requests: bool = False, questions: bool = False, declare_plan_lsp: bool = True
) -> types.ClientCapabilities:
    return types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(
            apply_edit=True,
            workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True),
        ),
        window=types.WindowClientCapabilities(
            work_done_progress=True,
            show_document=types.ShowDocumentClientCapabilities(support=True),
        ),
        experimental={
            "planLsp": {"permissionRequests": permission_requests, "questions": questions}
        }
        if declare_plan_lsp
        else None,
    )


def declare_save_documents(monkeypatch: Any) -> None:
    """From now on the harness's client also declares `experimental.planLsp.saveDocuments`
    (it saves a buffer when the server asks, as VS Code and Neovim do)."""
    import tests.lsp_harness as harness

    plain = harness.client_caps

    def caps(*args: Any, **kw: Any) -> types.ClientCapabilities:
        declared = plain(*args, **kw)
        assert declared.experimental is not None
        declared.experimental["planLsp"]["saveDocuments"] = True
        return declared

    monkeypatch.setattr(harness, "client_caps", caps)


@asynccontextmanager
async def running_server(
    roots: list[Path],
    *extra_args: str,
    init_options: dict[str, Any] | None = None,
    permission_requests: bool = False,
    questions: bool = False,
    env: dict[str, str] | None = None,
    declare_plan_lsp: bool = True,
) -> AsyncIterator[Editor]:
    client = LanguageClient(converter_factory=default_converter)
    state = EditorState()
    features = {m: f for m, f in DEFAULT_CLIENT_FEATURES.items() if m != types.WINDOW_SHOW_DOCUMENT}
    keep_diagnostics = features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def publish_diagnostics(client: LanguageClient, params: types.PublishDiagnosticsParams) -> Any:
        state.published.append((params.uri, params.version))
        state.published_event.set()
        return keep_diagnostics(client, params)

    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = publish_diagnostics
    register_lsp_features(client, features)
    _register(client, state)
    # The machine's own user config never leaks into a test (a test may name one).
    full_env = {**os.environ, "PLAN_LSP_CONFIG": os.devnull, **(env or {})}
    await client.start_io(*SERVER_CMD, *extra_args, env=full_env)
    editor = Editor(client, state, roots[0])
    editor.init_result = await asyncio.wait_for(  # type: ignore[attr-defined]
        client.initialize_session(
            types.InitializeParams(
                capabilities=client_caps(permission_requests, questions, declare_plan_lsp),
                workspace_folders=[
                    types.WorkspaceFolder(uri=r.resolve().as_uri(), name=r.name) for r in roots
                ],
                initialization_options=init_options,
            )
        ),
        60,
    )
    try:
        yield editor
    finally:
        await stop_client(client)


async def stop_client(client: LanguageClient) -> None:
    """Shut the server down politely (15 s), else kill it; then stop the client."""
    server = client._server
    if server is not None and server.returncode is None:
        try:
            await asyncio.wait_for(client.shutdown_session(), 15)
        except Exception:
            with contextlib.suppress(ProcessLookupError):
                server.kill()
    await client.stop()


async def kill_server(editor: Editor) -> None:
    """SIGKILL, as a crash would: no shutdown, no flush."""
    server = editor.client._server
    assert server is not None
    editor.client._stop_event.set()  # the exit is expected; don't fail pending waits
    os.kill(server.pid, signal.SIGKILL)
    await server.wait()
