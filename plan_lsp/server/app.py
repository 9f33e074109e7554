"""The pygls server: a protocol that never leaves a request unanswered, and a server whose
typed attributes are the features, each the one owner of its state (docs/architecture.md)."""

from __future__ import annotations

import logging
from collections.abc import Generator
from pathlib import Path
from typing import Any, BinaryIO, cast

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method
from pygls.protocol.json_rpc import JsonRPCResponseMessage
from pygls.uris import to_fs_path

from plan_lsp import __version__
from plan_lsp.core.workspaces import Workspaces
from plan_lsp.server.client import ClientChannel, negotiated_encoding
from plan_lsp.server.documents import DocumentStore
from plan_lsp.server.framing import GuardedStdin, UnreadableRequest, shorten
from plan_lsp.server.frontend import LspFrontEnd
from plan_lsp.server.params import RequestFailed
from plan_lsp.server.plan_views import PlanViews
from plan_lsp.server.plan_watch import PlanWatchers

log = logging.getLogger(__name__)


class _Refusals(logging.Filter):
    """A request the server refuses with a reason (RequestFailed: "a run is in progress",
    "cannot approve: …") is answered, not a server error: pygls logs every exception a
    handler raises at ERROR with its traceback; a refusal is one line at INFO instead, and
    invalid params one line at WARNING (the answer names the field)."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, RequestFailed):
            log.info("refused: %s", shorten(str(error)))
            return False
        if isinstance(error, JsonRpcInvalidParams):
            log.warning("invalid params: %s", shorten(str(error)))
            return False
        return True


logging.getLogger("pygls.protocol.json_rpc").addFilter(_Refusals())

# Filled in by `server/handlers.py`, which registers every method and command: the
# initialize answer advertises exactly what is registered.
ADVERTISED: dict[str, list[str]] = {"methods": [], "commands": []}


class PlanLspProtocol(LanguageServerProtocol):
    """Adds `capabilities.experimental.planLsp` to the initialize answer, prefers UTF-16
    positions when the client offers them, answers every request with an id — even one pygls
    cannot read — and takes a response it cannot read as a plain value, so no server→client
    request waits forever on a client's odd answer."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        is_message = isinstance(data, dict) and "jsonrpc" in data
        if is_message and "method" in data and "params" not in data:
            data["params"] = None  # JSON-RPC allows leaving params out
        if is_message and data.get("method") == types.TEXT_DOCUMENT_DID_CHANGE:
            _unversioned_change(data)
        try:
            return super().structure_message(data)
        except Exception as exc:
            if is_message and "id" in data and isinstance(data.get("method"), str):
                return UnreadableRequest(data["id"], data["method"], str(exc) or type(exc).__name__)
            if is_message and "id" in data and "method" not in data and "error" not in data:
                # e.g. `null` where a ShowDocumentResult belongs: hand over the raw value.
                return JsonRPCResponseMessage(
                    id=data["id"], jsonrpc=data["jsonrpc"], result=data.get("result")
                )
            raise

    def handle_message(self, message: Any) -> None:
        if isinstance(message, UnreadableRequest):
            log.warning("unreadable params for %s", shorten(message.method))
            self._send_response(
                message.id,
                None,
                JsonRpcInvalidParams(
                    f"invalid params for {shorten(message.method, 100)}"
                ).to_response_error(),
            )
            return
        if not hasattr(message, "jsonrpc"):
            # A nested object that looked like a message, left over from a failed outer
            # request, or anything else that is not one: nothing to answer.
            log.warning("ignored a JSON value that is not a JSON-RPC message")
            return
        super().handle_message(message)

    def _send_data(self, data: Any) -> None:
        # Through the client channel, which may hold it (`client.ReadBarrier`).
        cast(PlanLanguageServer, self._server).client.send(data, super()._send_data)

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(
        self, params: types.InitializeParams
    ) -> Generator[Any, Any, types.InitializeResult]:
        general = params.capabilities.general
        if general is not None and general.position_encodings:
            offered = list(general.position_encodings)
            if types.PositionEncodingKind.Utf16 in offered:
                offered.remove(types.PositionEncodingKind.Utf16)
                general.position_encodings = [types.PositionEncodingKind.Utf16, *offered]
        result: types.InitializeResult = yield from super().lsp_initialize(params)
        server = cast(PlanLanguageServer, self._server)
        server.documents.encoding = negotiated_encoding(result.capabilities.position_encoding)
        result.capabilities.experimental = {
            "planLsp": {
                "version": __version__,
                "methods": ADVERTISED["methods"],
                "notifications": ["planLsp/update"],
                "commands": ADVERTISED["commands"],
            }
        }
        return result


UNVERSIONED = -1


def _unversioned_change(data: dict[str, Any]) -> None:
    """Some clients send `didChange` with `version: null`; keep the change (as unversioned)
    rather than drop it, or the server's copy of the document would silently go stale."""
    params = data.get("params")
    document = params.get("textDocument") if isinstance(params, dict) else None
    if isinstance(document, dict) and document.get("version", 0) is None:
        document["version"] = UNVERSIONED


class PlanLanguageServer(LanguageServer):
    """Typed attributes only; each feature gets the few objects it uses in its constructor.
    The workflow itself is the session core's (`plan_lsp/core/`): `workspaces` holds one
    core per folder, and `frontend` is how the core reaches this client."""

    def __init__(self, cli_overrides: dict[str, Any] | None = None) -> None:
        super().__init__(
            "plan-lsp",
            __version__,
            protocol_cls=PlanLspProtocol,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        )
        overrides = dict(cli_overrides or {})
        workspace = overrides.pop("workspace", None)
        self.cli_overrides: dict[str, Any] = overrides
        self.default_root: Path | None = Path(workspace).resolve() if workspace else None
        self.client = ClientChannel(self)
        self.frontend = LspFrontEnd(self.client)
        self.documents = DocumentStore(self.client, self.frontend.write_file)
        self.workspaces = Workspaces(self.frontend, overrides)
        self.plan_views = PlanViews(
            self.client, self.documents, self.workspaces, self.text_document_publish_diagnostics
        )
        self.watchers = PlanWatchers(self.documents, self.plan_views)
        self.frontend.bind(self.documents, self.workspaces, self.plan_views)

    # -- logging -------------------------------------------------------------------------------

    def report_server_error(self, error: Exception, source: Any) -> None:
        # Errors from bad client input are answered in the response; never pop up for them,
        # and never copy untrusted input into the log in full.
        if isinstance(error, (RequestFailed, JsonRpcInvalidParams)):
            return  # answered with its reason, and logged in one line (_Refusals)
        log.error("server error (%s): %s", getattr(source, "__name__", source), shorten(str(error)))

    def start_io(self, stdin: Any = None, stdout: Any = None) -> None:
        import sys

        super().start_io(cast(BinaryIO, GuardedStdin(stdin or sys.stdin.buffer)), stdout)


def workspace_roots_from(params: types.InitializeParams, default: Path | None) -> list[Path]:
    roots: list[Path] = []
    for folder in params.workspace_folders or []:
        path = to_fs_path(folder.uri)
        if path:
            roots.append(Path(path))
    if not roots and params.root_uri:
        path = to_fs_path(params.root_uri)
        if path:
            roots.append(Path(path))
    if not roots and params.root_path:
        roots.append(Path(params.root_path))
    if default is not None and default not in roots:
        roots.insert(0, default) if not roots else roots.append(default)
    if not roots:
        roots.append(Path.cwd())
    return roots
