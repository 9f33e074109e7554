"""The session core's `FrontEnd` over LSP: updates as `planLsp/update` (or, for clients
that do not render it, `window/logMessage` and `$/progress`), questions as
`window/showMessageRequest`, buffers from the document store, lenses refreshed."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from plan_lsp.core.frontend import AgentPortsFor, BufferEdit, HeldByEditor, Notify
from plan_lsp.server.client import ClientChannel
from plan_lsp.server.editor_port import LspEditorPort
from plan_lsp.server.plan_drafts import LspPlanDrafts
from plan_lsp.server.run_log import describe_update
from plan_lsp.server.user_port import LspUserPort

if TYPE_CHECKING:
    from plan_lsp.core.workspaces import Workspaces
    from plan_lsp.protocol.updates import Update
    from plan_lsp.server.documents import DocumentStore
    from plan_lsp.server.plan_views import PlanViews


class LspFrontEnd:
    """One per connection; bound to the document store, the workspaces and the plan views
    once the server has built them (`bind`)."""

    def __init__(self, client: ClientChannel) -> None:
        self.client = client
        self._documents: DocumentStore | None = None
        self._workspaces: Workspaces | None = None
        self._views: PlanViews | None = None
        # $/progress token of each run under way.
        self._progress: dict[str, str] = {}

    def bind(self, documents: DocumentStore, workspaces: Workspaces, views: PlanViews) -> None:
        self._documents = documents
        self._workspaces = workspaces
        self._views = views

    @property
    def documents(self) -> DocumentStore:
        assert self._documents is not None, "LspFrontEnd used before bind()"
        return self._documents

    # -- updates ----------------------------------------------------------------------------------

    def update(self, update: Update) -> None:
        """The core's update as LSP: the `planLsp/update` notification (the contract's JSON:
        the fields the update was given), or for a client that does not render it, the
        standard equivalents."""
        client = self.client
        if client.support.plan_lsp:
            client.update(update.model_dump(mode="json"))
            return
        line = describe_update(update)
        if line is None:
            return
        client.log(line)
        token = self._progress.get(str(update.runId))
        if token is not None:
            client.progress_report(token, line)

    def run_began(self, run_id: str, kind: str) -> None:
        token = f"plan-lsp-run-{run_id}"
        self._progress[run_id] = token
        self.client.progress_begin(token, f"plan-lsp: {kind} run")

    def run_ended(self, run_id: str, stop_reason: str) -> None:
        token = self._progress.pop(run_id, None)
        if token is not None:
            self.client.progress_end(token, stop_reason)

    def show(self, message: str, *, warning: bool = False) -> None:
        kind = types.MessageType.Warning if warning else types.MessageType.Info
        self.client.show(message, kind)

    async def ask(self, message: str, options: list[str], *, warning: bool = False) -> str | None:
        kind = types.MessageType.Warning if warning else types.MessageType.Info
        return await self.client.ask(message, options, kind)

    # -- buffers and files ------------------------------------------------------------------------

    def buffer_text(self, path: Path) -> str | None:
        return self.documents.text(path)

    async def save_buffer(self, path: Path) -> bool:
        return await self.documents.save(path)

    async def edit_and_save(self, path: Path, text: str, label: str) -> BufferEdit:
        return await self.documents.edit_and_save(path, text, label)

    def write_file(self, path: Path, text: str, *, behind_buffer: bool = False) -> None:
        """Through the workspaces' one safe writer, never behind a buffer that only the
        user saves: Vim (coc.nvim) would ask about a file written behind a buffer it holds
        (W11, W12, and `:w` asks again); the buffer goes to disk when the user saves it.
        `behind_buffer`: written all the same (a command is about to read it)."""
        if not behind_buffer and self.client.support.user_saves and self.documents.get(path):
            raise HeldByEditor(f"{path} is open in the editor: it is written when you save it")
        assert self._workspaces is not None, "LspFrontEnd used before bind()"
        self._workspaces.write_file(path, text)

    def plans_changed(self) -> None:
        if self._views is not None:
            self._views.refresh()

    def agent_ports(self, notify: Notify) -> AgentPortsFor:
        return AgentPortsFor(
            editor=LspEditorPort(self.documents),
            user=LspUserPort(self.client, notify),
            drafts=LspPlanDrafts(self.client, self.documents, self.write_file, notify),
        )
