"""The pygls server: wiring only. Feature modules register themselves on it."""

from __future__ import annotations

import logging
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method
from pygls.uris import to_fs_path

from plan_lsp import __version__
from plan_lsp.server.framing import GuardedStdin, UnreadableRequest, shorten
from plan_lsp.server.plain import to_plain

if TYPE_CHECKING:
    from plan_lsp.server.lazy import Implementations
    from plan_lsp.server.workspaces import Workspaces

log = logging.getLogger(__name__)

UPDATE = "planLsp/update"
CUSTOM_METHODS = [
    "planLsp/state",
    "planLsp/setMode",
    "planLsp/toggleMode",
    "planLsp/setPermissionMode",
    "planLsp/prompt",
    "planLsp/cancel",
    "planLsp/approvePlan",
    "planLsp/rejectPlan",
    "planLsp/planRevisions",
    "planLsp/history",
    "planLsp/newSession",
    "planLsp/testConnection",
]
COMMANDS = [
    "planLsp.approvePlan",
    "planLsp.rejectPlan",
    "planLsp.toggleMode",
    "planLsp.showPreviousRevision",
]


class PlanLspProtocol(LanguageServerProtocol):
    """Adds `capabilities.experimental.planLsp` to the initialize answer, and answers every
    request with an id — even one pygls cannot read — so no client waits forever."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        is_message = isinstance(data, dict) and "jsonrpc" in data
        if is_message and "method" in data and "params" not in data:
            data["params"] = None  # JSON-RPC allows leaving params out
        try:
            return super().structure_message(data)
        except Exception as exc:
            if is_message and "id" in data and isinstance(data.get("method"), str):
                return UnreadableRequest(data["id"], data["method"], str(exc) or type(exc).__name__)
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

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(
        self, params: types.InitializeParams
    ) -> Generator[Any, Any, types.InitializeResult]:
        result: types.InitializeResult = yield from super().lsp_initialize(params)
        result.capabilities.experimental = {
            "planLsp": {
                "version": __version__,
                "methods": CUSTOM_METHODS,
                "notifications": [UPDATE],
                "commands": COMMANDS,
            }
        }
        return result


class PlanLanguageServer(LanguageServer):
    def __init__(self, cli_overrides: dict[str, Any] | None = None) -> None:
        super().__init__(
            "plan-lsp",
            __version__,
            protocol_cls=PlanLspProtocol,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        )
        self.cli_overrides = dict(cli_overrides or {})
        self.default_root: Path | None = (
            Path(self.cli_overrides.pop("workspace")).resolve()
            if self.cli_overrides.get("workspace")
            else None
        )
        self.roots: list[Path] = []
        self.init_options: dict[str, Any] = {}
        self._workspaces: Workspaces | None = None
        self._implementations: Implementations | None = None

    # Everything beyond the wiring is imported after the initialize answer, on first use, so
    # start-up costs what a bare pygls server costs.

    @property
    def workspaces(self) -> Workspaces:
        if self._workspaces is None:
            from plan_lsp.server.workspaces import Workspaces

            workspaces = Workspaces(self.warn_user, self.cli_overrides)
            workspaces.init_options = self.init_options
            workspaces.set_roots(self.roots)
            self._workspaces = workspaces
        return self._workspaces

    @property
    def implementations(self) -> Implementations:
        if self._implementations is None:
            from plan_lsp.server.lazy import Implementations

            self._implementations = Implementations.load(self)
        return self._implementations

    # -- client capabilities ---------------------------------------------------------------

    def _experimental_plan_lsp(self) -> Any:
        try:
            exp = self.client_capabilities.experimental
        except Exception:  # before initialize
            return None
        plain = to_plain(exp) if exp is not None else {}
        return plain.get("planLsp") if isinstance(plain, dict) else None

    def client_experimental(self) -> dict[str, Any]:
        inner = self._experimental_plan_lsp()
        return inner if isinstance(inner, dict) else {}

    def client_declares_plan_lsp(self) -> bool:
        """Whether the client declared `experimental.planLsp` (any object): only such
        clients receive `planLsp/update` notifications."""
        return isinstance(self._experimental_plan_lsp(), dict)

    # -- messages to the user --------------------------------------------------------------

    def warn_user(self, message: str) -> None:
        log.warning("%s", message)
        try:
            self.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Warning, message=message)
            )
        except Exception:  # no transport yet (e.g. during tests of the store)
            log.debug("could not show message", exc_info=True)

    def notify_update(self, payload: dict[str, Any]) -> None:
        if self.client_declares_plan_lsp():
            self.protocol.notify(UPDATE, payload)

    def report_server_error(self, error: Exception, source: Any) -> None:
        # Errors from bad client input are answered in the response; never pop up for them,
        # and never copy untrusted input into the log in full.
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
