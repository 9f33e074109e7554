"""Everything the server sends to the client, with capability discipline.

Custom notifications go only to clients that declared `experimental.planLsp`; progress only to
clients that declared work-done progress; `window/showDocument` only where it is supported.
Every server→client request has a timeout, and an answer the client gets wrong (`null` where a
result object belongs, a malformed object) counts as "no" — no handler waits forever on a
client.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from plan_lsp.plan.text import Encoding
from plan_lsp.server.plain import to_plain

if TYPE_CHECKING:
    from plan_lsp.server.app import PlanLanguageServer

log = logging.getLogger(__name__)

UPDATE = "planLsp/update"
# How long the server waits for the client's answer to one of its requests.
REQUEST_TIMEOUT_S = 30.0
# Requests a person answers (permission prompts, questions) may take longer.
PERSON_TIMEOUT_S = 15 * 60.0

_ENCODINGS: dict[str, Encoding] = {
    types.PositionEncodingKind.Utf8: "utf-8",
    types.PositionEncodingKind.Utf16: "utf-16",
    types.PositionEncodingKind.Utf32: "utf-32",
}


@dataclass(frozen=True)
class ClientSupport:
    """What the client declared in `initialize`, read once."""

    plan_lsp: bool = False
    permission_requests: bool = False
    questions: bool = False
    save_documents: bool = False
    show_document: bool = False
    work_done_progress: bool = False
    apply_edit: bool = False
    document_changes: bool = False
    create_files: bool = False
    code_lens_refresh: bool = False
    # Editing a file the client has not opened makes it load the file without asking.
    silent_load_on_edit: bool = False

    @classmethod
    def from_capabilities(
        cls, caps: types.ClientCapabilities | None, client_name: str = ""
    ) -> ClientSupport:
        if caps is None:
            return cls()
        experimental = to_plain(caps.experimental) if caps.experimental is not None else None
        plan = experimental.get("planLsp") if isinstance(experimental, dict) else None
        declared = isinstance(plan, dict)
        options = plan if isinstance(plan, dict) else {}
        window = caps.window
        workspace = caps.workspace
        edit = workspace.workspace_edit if workspace else None
        operations = (edit.resource_operations or []) if edit else []
        return cls(
            plan_lsp=declared,
            permission_requests=bool(options.get("permissionRequests")),
            questions=bool(options.get("questions")),
            save_documents=bool(options.get("saveDocuments")),
            show_document=bool(window and window.show_document and window.show_document.support),
            work_done_progress=bool(window and window.work_done_progress),
            apply_edit=bool(workspace and workspace.apply_edit),
            document_changes=bool(edit and edit.document_changes),
            create_files=types.ResourceOperationKind.Create in operations,
            code_lens_refresh=bool(
                workspace and workspace.code_lens and workspace.code_lens.refresh_support
            ),
            # A client that declares no window capabilities at all is a minimal one: eglot 1.9
            # (no clientInfo either) asks "Server wants to edit …?" before touching a file it
            # does not visit, whatever `eglot-confirm-server-initiated-edits` says.
            silent_load_on_edit=window is not None and client_name.strip().lower() != "eglot",
        )


def negotiated_encoding(server_encoding: Any) -> Encoding:
    return _ENCODINGS.get(str(server_encoding), "utf-16")


class ClientChannel:
    """The server's one way to talk to the client."""

    def __init__(self, ls: PlanLanguageServer) -> None:
        self.ls = ls
        self.support = ClientSupport()
        self._progress_ready: set[str] = set()
        self._progress_ended_early: dict[str, str] = {}
        self._tasks: set[asyncio.Future[None]] = set()

    def initialized(self, params: types.InitializeParams) -> None:
        name = params.client_info.name if params.client_info else ""
        self.support = ClientSupport.from_capabilities(params.capabilities, name)

    # -- notifications ------------------------------------------------------------------------

    def update(self, payload: dict[str, Any]) -> None:
        """`planLsp/update`, only for clients that render it."""
        if self.support.plan_lsp:
            self.ls.protocol.notify(UPDATE, payload)

    def log(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        with contextlib.suppress(Exception):
            self.ls.window_log_message(types.LogMessageParams(type=kind, message=message))

    def show(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        log.log(logging.WARNING if kind <= types.MessageType.Warning else logging.INFO, message)
        with contextlib.suppress(Exception):
            self.ls.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def refresh_code_lenses(self) -> None:
        if self.support.code_lens_refresh:
            with contextlib.suppress(Exception):
                self.ls.protocol.send_request(types.WORKSPACE_CODE_LENS_REFRESH, None)

    # -- requests -----------------------------------------------------------------------------

    async def request(
        self, method: str, params: Any, timeout: float = REQUEST_TIMEOUT_S
    ) -> tuple[bool, Any]:
        """(answered, result as plain JSON). Not answered: an error, a timeout, no transport."""
        try:
            future = self.ls.protocol.send_request_async(method, params)
            result = await asyncio.wait_for(future, timeout)
        except asyncio.CancelledError:
            raise
        except TimeoutError:
            log.warning("the client did not answer %s within %g s", method, timeout)
            return False, None
        except Exception as exc:
            log.info("%s failed: %s", method, exc)
            return False, None
        return True, to_plain(result)

    async def apply_edit(self, edit: types.WorkspaceEdit, label: str) -> bool:
        if not self.support.apply_edit:
            return False
        params = types.ApplyWorkspaceEditParams(edit=edit, label=label)
        answered, result = await self.request(types.WORKSPACE_APPLY_EDIT, params)
        return answered and isinstance(result, dict) and result.get("applied") is True

    async def show_document(self, uri: str, take_focus: bool) -> bool:
        """Whether the client showed it; a client without the capability is not asked."""
        if not self.support.show_document:
            return False
        params = types.ShowDocumentParams(uri=uri, take_focus=take_focus)
        answered, result = await self.request(types.WINDOW_SHOW_DOCUMENT, params, timeout=10)
        return answered and isinstance(result, dict) and result.get("success") is True

    async def save_document(self, uri: str) -> bool:
        """Ask a client that declared `experimental.planLsp.saveDocuments` to save a buffer."""
        if not self.support.save_documents:
            return False
        answered, result = await self.request("planLsp/saveDocument", {"uri": uri}, timeout=10)
        return answered and isinstance(result, dict) and result.get("saved") is True

    async def ask(self, message: str, actions: list[str], kind: types.MessageType) -> str | None:
        """`window/showMessageRequest`: the title of the chosen action, or None."""
        params = types.ShowMessageRequestParams(
            type=kind, message=message, actions=[types.MessageActionItem(title=a) for a in actions]
        )
        answered, result = await self.request(
            types.WINDOW_SHOW_MESSAGE_REQUEST, params, timeout=PERSON_TIMEOUT_S
        )
        title = result.get("title") if answered and isinstance(result, dict) else None
        return title if isinstance(title, str) else None

    # -- progress -----------------------------------------------------------------------------

    def progress_begin(self, token: str, title: str) -> None:
        """Start work-done progress without waiting for the client: the create request runs
        in the background and `begin` follows its answer (a client that never answers it
        delays nothing)."""
        if not self.support.work_done_progress:
            return

        async def _create() -> None:
            answered, _ = await self.request(
                types.WINDOW_WORK_DONE_PROGRESS_CREATE,
                types.WorkDoneProgressCreateParams(token=token),
                timeout=10,
            )
            if answered:
                self._progress_ready.add(token)
                self._progress(token, types.WorkDoneProgressBegin(title=title, cancellable=True))
                if token in self._progress_ended_early:
                    self.progress_end(token, self._progress_ended_early.pop(token))

        task = asyncio.ensure_future(_create())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def progress_report(self, token: str, message: str) -> None:
        if token in self._progress_ready:
            self._progress(token, types.WorkDoneProgressReport(message=message[:200]))

    def progress_end(self, token: str, message: str) -> None:
        if token in self._progress_ready:
            self._progress_ready.discard(token)
            self._progress(token, types.WorkDoneProgressEnd(message=message[:200]))
        elif self.support.work_done_progress:
            self._progress_ended_early[token] = message  # ended before the client answered

    def _progress(self, token: str, value: Any) -> None:
        with contextlib.suppress(Exception):
            self.ls.protocol.notify(types.PROGRESS, types.ProgressParams(token=token, value=value))
