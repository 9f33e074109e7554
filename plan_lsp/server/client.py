"""Everything the server sends to the client, with capability discipline.

Custom notifications go only to clients that declared `experimental.planLsp`; progress only to
clients that declared work-done progress; `window/showDocument` only where it is supported.
Every server→client request has a timeout, and an answer the client gets wrong (`null` where a
result object belongs, a malformed object) counts as "no" — no handler waits forever on a
client. For a client that drops or strands what follows an answer in the same read (both
Emacs clients), every message goes through a `ReadBarrier`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from plan_lsp.plan.text import Encoding
from plan_lsp.server.plain import to_plain

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

log = logging.getLogger(__name__)

UPDATE = "planLsp/update"
# How long the server waits for the client's answer to one of its requests.
REQUEST_TIMEOUT_S = 30.0
# Requests a person answers (permission prompts, questions) may take longer.
PERSON_TIMEOUT_S = 15 * 60.0
# A probe the client lost is sent again after this long; a client that answers none within
# PROBE_GIVE_UP_S gets what was held, and no barrier from then on.
PROBE_RETRY_S = 0.2
PROBE_GIVE_UP_S = 5.0

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
    code_lens_refresh: bool = False
    # Editing a file the client has not opened makes it load the file without asking, and
    # open it (didOpen), so what follows reaches the server's copy.
    opens_on_edit: bool = False
    # What arrives in the same read as the answer to one of the client's synchronous
    # requests is lost (lsp-mode) or left unread until more arrives (eglot): `ReadBarrier`.
    needs_read_barrier: bool = False
    # Neovim prints "Workspace edit <label>" for every workspace/applyEdit with a label:
    # a streaming plan would fill its message area and :messages with one line per edit.
    edit_labels: bool = True
    # The client saves a buffer only when the user does (coc.nvim: "the buffers aren't
    # saved after applying workspace edits; use :wa"), and its editor asks about a file
    # written behind a buffer it holds (Vim's W11/W12/W13). The server never writes a file
    # the client has open: the user's `:w` writes exactly the buffer.
    user_saves: bool = False
    # The editor asks the user before it takes an edit to a buffer whose file changed on disk
    # (Emacs: "changed on disk; reread?", "really edit the buffer?").
    asks_about_changed_files: bool = False
    # The code actions' kind: None for clients that list only unkinded, quickfix and
    # refactor actions by default (coc.nvim hides `source` actions unless asked for them).
    code_action_kind: str | None = types.CodeActionKind.Source

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
        name = client_name.strip().lower()
        # lsp-mode names itself "emacs"; eglot 1.9 sends no clientInfo and declares no window
        # capabilities (a minimal client), later eglot names itself "Eglot".
        lsp_mode = name == "emacs"
        eglot = name == "eglot" or (not name and window is None)
        coc = name == "coc.nvim"
        return cls(
            # `experimental.planLsp.updates: false`: a client that declares planLsp for its
            # requests (saveDocuments, say) but renders no updates gets the standard ones.
            plan_lsp=declared and options.get("updates", True) is not False,
            permission_requests=bool(options.get("permissionRequests")),
            questions=bool(options.get("questions")),
            save_documents=bool(options.get("saveDocuments")),
            show_document=bool(window and window.show_document and window.show_document.support),
            work_done_progress=bool(window and window.work_done_progress),
            apply_edit=bool(workspace and workspace.apply_edit),
            document_changes=bool(edit and edit.document_changes),
            code_lens_refresh=bool(
                workspace and workspace.code_lens and workspace.code_lens.refresh_support
            ),
            # eglot 1.9 asks "Server wants to edit …?" before touching a file it does not
            # visit, whatever `eglot-confirm-server-initiated-edits` says. lsp-mode loads the
            # file into a buffer it does not show and, with `lsp-deferred` (its recommended
            # hook), does not open until the user shows it: the server could not see that
            # buffer, and writing the plan to disk would leave it stale ("changed on disk"
            # at the user's next edit).
            opens_on_edit=window is not None and not eglot and not lsp_mode,
            needs_read_barrier=(lsp_mode or eglot)
            and bool(workspace and workspace.workspace_folders),
            edit_labels=name != "neovim",
            user_saves=coc and not options.get("saveDocuments"),
            asks_about_changed_files=lsp_mode or eglot,
            code_action_kind=None if coc else types.CodeActionKind.Source,
        )


def negotiated_encoding(server_encoding: Any) -> Encoding:
    return _ENCODINGS.get(str(server_encoding), "utf-16")


def _is_answer(message: Any) -> bool:
    """A response (result or error) to one of the client's requests."""
    if isinstance(message, dict):
        return "id" in message and "method" not in message
    return hasattr(message, "id") and not hasattr(message, "method")


class ReadBarrier:
    """Holds every message written after an answer to the client until the client has
    proven it read past that answer.

    Both Emacs clients wait for the answer to a synchronous request (a code lens click, a
    code action, any `lsp-request` or `jsonrpc-request`) by throwing out of their process
    filter when the answer is dispatched. lsp-mode loses the other messages that read
    brought (emacs-lsp/lsp-mode#4323, in 8.0 and 9.0); eglot 1.9 (Emacs 28's jsonrpc 1.0.14)
    leaves them in the process buffer until the server writes something else. Either way the
    progress request and the `applyEdit` the server sends right after answering
    `workspace/executeCommand` go unanswered (for good, or until the edit's timeout makes
    the server write again).

    So after an answer, anything else waits while a probe (`workspace/workspaceFolders`,
    which changes nothing) goes out: a client that answers a probe written after the answer
    has read past the answer, and what was held can go. A probe lost the same way is sent
    again. Messages keep their order; a client that answers no probe within
    PROBE_GIVE_UP_S gets everything at once and no barrier from then on."""

    def __init__(self, probe: Callable[[str], Future[Any]], forget: Callable[[str], None]):
        self.enabled = False
        self._probe = probe
        self._forget = forget
        self._write: Callable[[Any], None] | None = None
        self._held: deque[Any] = deque()
        self._answers = 0  # answers written
        self._read_past = 0  # answers the client has proven it read past
        self._covered = -1  # answers covered by the latest probe sent
        self._in_flight: list[str] = []
        self._ids = itertools.count(1)
        self._since: float | None = None  # when the current wait began
        self._retry: asyncio.TimerHandle | None = None
        self._probing = False

    def send(self, message: Any, write: Callable[[Any], None]) -> None:
        self._write = write
        if self._probing or not self.enabled:
            write(message)
            return
        if self._held or self._read_past < self._answers:
            self._held.append(message)
            self._wait()
            return
        write(message)
        if _is_answer(message):
            self._answers += 1

    def _wait(self) -> None:
        """Make sure a probe covering every answer written so far is on its way."""
        if self._covered == self._answers:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._release("no event loop")
            return
        if self._since is None:
            self._since = time.monotonic()
        self._send_probe()
        if self._retry is None:
            self._retry = loop.call_later(PROBE_RETRY_S, self._again)

    def _send_probe(self) -> None:
        msg_id = f"plan-lsp-read-{next(self._ids)}"
        covers = self._covered = self._answers
        self._in_flight.append(msg_id)
        self._probing = True
        try:
            future = self._probe(msg_id)
        finally:
            self._probing = False
        future.add_done_callback(lambda f: None if f.cancelled() else self._proven(msg_id, covers))

    def _again(self) -> None:
        self._retry = None
        if not self._held:
            return
        if self._since is not None and time.monotonic() - self._since > PROBE_GIVE_UP_S:
            self._release(f"no answer to {len(self._in_flight)} probes")
            return
        self._send_probe()
        self._retry = asyncio.get_running_loop().call_later(PROBE_RETRY_S, self._again)

    def _proven(self, msg_id: str, covers: int) -> None:
        self._read_past = max(self._read_past, covers)
        if msg_id in self._in_flight:
            # The client reads in order: the probes sent before this one were lost.
            answered = self._in_flight.index(msg_id)
            for lost in self._in_flight[:answered]:
                self._forget(lost)
            del self._in_flight[: answered + 1]
        self._flush()

    def _flush(self) -> None:
        while self._held and self._read_past >= self._answers and self._write is not None:
            message = self._held.popleft()
            self._write(message)
            if _is_answer(message):
                self._answers += 1
        if self._held:
            self._since = None
            self._wait()
            return
        self._since = None
        if self._retry is not None:
            self._retry.cancel()
            self._retry = None

    def stop(self, why: str, write: Callable[[Any], None]) -> None:
        """No barrier from now on; what is held goes now."""
        self._write = write
        self._release(why, warn=False)

    def _release(self, why: str, warn: bool = True) -> None:
        if warn:
            log.warning("no read proven past an answer (%s): sending without waiting", why)
        self.enabled = False
        if self._retry is not None:
            self._retry.cancel()
            self._retry = None
        held, self._held = self._held, deque()
        for message in held:
            if self._write is not None:
                self._write(message)


class ClientChannel:
    """The server's one way to talk to the client."""

    def __init__(self, ls: LanguageServer) -> None:
        self.ls = ls
        self.support = ClientSupport()
        self.barrier = ReadBarrier(self._probe, self._forget)
        self._progress_ready: set[str] = set()
        self._progress_ended_early: dict[str, str] = {}
        self._tasks: set[asyncio.Future[None]] = set()

    def initialized(self, params: types.InitializeParams) -> None:
        name = params.client_info.name if params.client_info else ""
        self.support = ClientSupport.from_capabilities(params.capabilities, name)
        self.barrier.enabled = self.support.needs_read_barrier

    def send(self, message: Any, write: Callable[[Any], None]) -> None:
        """Every message to the client, answers included, passes here (`PlanLspProtocol`)."""
        if self.barrier.enabled and getattr(self.ls.protocol, "_shutdown", False):
            # After `shutdown` pygls reads nothing but `exit`: no probe answer would come.
            self.barrier.stop("shutting down", write)
        self.barrier.send(message, write)

    def _probe(self, msg_id: str) -> Future[Any]:
        protocol = self.ls.protocol
        future = protocol.send_request(types.WORKSPACE_WORKSPACE_FOLDERS, None, msg_id=msg_id)
        # Any answer will do (lsp-mode leaves out the folders' required `name`).
        protocol._result_types.pop(msg_id, None)
        return future

    def _forget(self, msg_id: str) -> None:
        protocol = self.ls.protocol
        future = protocol._request_futures.pop(msg_id, None)
        protocol._result_types.pop(msg_id, None)
        if future is not None and not future.done():
            future.cancel()

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
        shown = label if self.support.edit_labels else None
        params = types.ApplyWorkspaceEditParams(edit=edit, label=shown)
        answered, result = await self.request(types.WORKSPACE_APPLY_EDIT, params)
        applied = answered and isinstance(result, dict) and result.get("applied") is True
        if not applied:
            why = result.get("failureReason") if isinstance(result, dict) else None
            log.info("the client did not apply an edit (%s)", why or "no reason given")
        return applied

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
