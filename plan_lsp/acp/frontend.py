"""The session core's `FrontEnd` for one ACP session: updates become `session/update`
notifications, sent in order; permission prompts become `session/request_permission`; there
are no editor buffers (the agent reads and writes the disk, inside the same walls as over
LSP), and the client's `fs/*` and `terminal/*` are never used for the agent's work."""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import helpers, schema

from plan_lsp.acp import translate
from plan_lsp.core.frontend import AgentPortsFor, BufferEdit, Notify
from plan_lsp.core.plain_ports import DraftProgress, NoEditor
from plan_lsp.policy.ports import PermissionRequest
from plan_lsp.protocol.state import PermissionAnswer, Question

if TYPE_CHECKING:
    from acp.interfaces import Client

    from plan_lsp.core.workspaces import Workspaces
    from plan_lsp.protocol.updates import Update

log = logging.getLogger(__name__)

# How long the client may take to hand over a buffer's text.
READ_TIMEOUT_S = 10.0

# The options of a permission request: each one's id is its kind and the user's answer.
PERMISSION_OPTIONS: dict[str | None, PermissionAnswer] = {
    "allow_once": "allow_once",
    "allow_always": "allow_always",
    "reject_once": "reject_once",
}
OPTION_NAMES = ["Allow once", "Allow always (this kind of call, this session)", "Deny"]


class AcpFrontEnd:
    def __init__(self, conn: Client, session_id: str, root: Path) -> None:
        self.conn = conn
        self.session_id = session_id
        self.root = root
        self.workspaces: Workspaces | None = None
        # Set by session/cancel: pending questions to the user answer "cancelled".
        self.cancelled = asyncio.Event()
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._pump: asyncio.Task[None] | None = None
        # The walk of the core's updates into session/update (acp/translate.py).
        self.walk = translate.Walk(root)
        # Permission requests made so far (each gets its own tool call id).
        self.asked = 0
        # The client declared `fs.readTextFile`: it can hand over an open buffer's text.
        self.reads_buffers = False
        # Buffer texts the client handed over for the plan being approved (see read_buffer).
        self._buffers: dict[Path, str] = {}
        # The plan text last shown in the conversation (a revision says what changed).
        self.shown_plan: str | None = None

    # -- updates, in order ------------------------------------------------------------------------

    def send(self, update: Any) -> None:
        self._queue.put_nowait(update)
        if self._pump is None or self._pump.done():
            self._pump = asyncio.ensure_future(self._send_all())

    async def _send_all(self) -> None:
        while not self._queue.empty():
            update = self._queue.get_nowait()
            try:
                await self.conn.session_update(self.session_id, update)
            except Exception as exc:  # a client gone or refusing: the run goes on
                log.warning("session/update not delivered: %s", exc)

    async def drained(self) -> None:
        """Every update queued so far has been sent."""
        while self._pump is not None and not self._pump.done():
            await asyncio.shield(self._pump)

    def update(self, update: Update) -> None:
        for sent in self.walk.live(update):
            self.send(sent)

    def replay(self, updates: list[Update]) -> None:
        walk = translate.Walk(self.root, replay=True)
        for update in updates:
            for sent in walk.live(update):
                self.send(sent)

    def run_began(self, run_id: str, kind: str) -> None:
        return None

    def run_ended(self, run_id: str, stop_reason: str) -> None:
        return None

    def show(self, message: str, *, warning: bool = False) -> None:
        self.send(helpers.update_agent_message_text(f"\n\n{message}\n"))

    def show_plan(self, path: Path, text: str, *, from_editor: bool = False) -> None:
        """The whole plan into the conversation as the agent's message (Markdown, the text
        exactly, in a chunk of its own) before its approval is asked — clients do not show
        a permission request's content; a revision says what changed; `from_editor`: the
        client's buffer differs from the text shown just before."""
        name = translate.shown_path(self.root, str(path))
        before = self.shown_plan
        if from_editor:
            head = f"Your editor's `{name}` differs from the plan above ({_changed(before, text)})"
            head += "; this is the text you approve:"
        elif before is None:
            head = f"The plan for your approval (`{name}`):"
        elif before == text:
            head = f"The plan for your approval, unchanged (`{name}`):"
        else:
            head = f"Revised plan (`{name}`, {_changed(before, text)}):"
        self.send(helpers.update_agent_message_text(f"\n\n**{head}**\n\n"))
        self.send(helpers.update_agent_message_text(text))
        self.send(helpers.update_agent_message_text("\n" if text.endswith("\n") else "\n\n"))
        self.shown_plan = text

    async def ask(self, message: str, options: list[str], *, warning: bool = False) -> str | None:
        # ACP has no free question with fixed answers outside a tool call: the workflow's
        # confirmations are made by the ACP agent itself (the plan's permission request).
        log.info("not asked over ACP: %s", message)
        return None

    # -- no editor buffers ----------------------------------------------------------------------

    def buffer_text(self, path: Path) -> str | None:
        return self._buffers.get(path)

    async def read_buffer(self, path: Path) -> str | None:
        """The client's text of `path` — an unsaved editor buffer included — when it
        declared `fs.readTextFile`, held as this file's buffer until `forget_buffer`: the
        plan the user approves is the one their editor shows. None when it cannot say."""
        if not self.reads_buffers:
            return None
        await self.drained()
        try:
            answer = await asyncio.wait_for(
                self.conn.read_text_file(session_id=self.session_id, path=str(path)),
                READ_TIMEOUT_S,
            )
        except Exception as exc:  # no answer, or an error: the disk is what there is
            log.info("fs/read_text_file %s: %s", path, exc)
            return None
        self._buffers[path] = answer.content
        return answer.content

    def forget_buffer(self, path: Path) -> None:
        self._buffers.pop(path, None)

    async def save_buffer(self, path: Path) -> bool:
        return False

    async def edit_and_save(self, path: Path, text: str, label: str) -> BufferEdit:
        return BufferEdit(False, reason="no editor buffers over ACP")

    def write_file(self, path: Path, text: str) -> None:
        assert self.workspaces is not None, "AcpFrontEnd used before its workspaces exist"
        self.workspaces.write_file(path, text)

    def plans_changed(self) -> None:
        return None

    def agent_ports(self, notify: Notify) -> AgentPortsFor:
        return AgentPortsFor(editor=NoEditor(), user=AcpUser(self), drafts=DraftProgress(notify))

    # -- asking the user --------------------------------------------------------------------------

    async def request_permission(
        self, tool_call: schema.ToolCallUpdate, options: list[schema.PermissionOption]
    ) -> str | None:
        """The option the user chose, or None (cancelled, or the client failed). Every
        update queued before (the call's announcement, the plan's text) reaches the client
        first."""
        await self.drained()
        asking = asyncio.ensure_future(
            self.conn.request_permission(
                session_id=self.session_id, tool_call=tool_call, options=options
            )
        )
        stop = asyncio.ensure_future(self.cancelled.wait())
        try:
            done, _ = await asyncio.wait({asking, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
        if asking not in done:
            asking.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asking
            return None
        try:
            answer = asking.result()
        except Exception as exc:
            log.warning("session/request_permission failed: %s", exc)
            return None
        outcome = answer.outcome
        return outcome.option_id if isinstance(outcome, schema.AllowedOutcome) else None


def _changed(before: str | None, after: str) -> str:
    """What changed between two texts, in lines: "2 lines added, 1 removed"."""
    diff = list(difflib.ndiff((before or "").splitlines(), after.splitlines()))
    added, removed = (sum(line.startswith(mark) for line in diff) for mark in ("+ ", "- "))
    return f"{added} line{'s' if added != 1 else ''} added, {removed} removed"


class AcpUser:
    """`UserPort` over ACP: permission prompts for calls the permission mode asks about."""

    def __init__(self, frontend: AcpFrontEnd) -> None:
        self.frontend = frontend

    async def request_permission(self, request: PermissionRequest) -> PermissionAnswer:
        """Asked on the model's call as announced (or on a call announced here for it and
        ended with the answer), titled in words, an edit with its diff."""
        frontend = self.frontend
        frontend.asked += 1
        content: list[Any] = []
        locations: list[schema.ToolCallLocation] | None = None
        if request.change is not None:
            # The server's own before/after of the edit (the tool's code computed it).
            wire = request.change.wire()
            locations = [schema.ToolCallLocation(path=str(request.change.path))]
            if not wire["truncated"]:
                content.append(
                    helpers.tool_diff_content(
                        str(request.change.path), request.change.after, request.change.before
                    )
                )
        title = translate.call_title(request.tool, request.arguments, frontend.root)
        warning = request.summary.partition(" (WARNING: ")[2]
        title = (title + (f" (WARNING: {warning}" if warning else ""))[:300]
        kind = translate.TOOL_KINDS.get(request.tool, "other")
        call_id = frontend.walk.call_for(request.tool, request.arguments)
        announced = call_id is not None
        if call_id is None:
            call_id = f"permission-{request.run_id}-{frontend.asked}"
            start = helpers.start_tool_call(
                call_id, title, kind=kind, status="pending", locations=locations,
                raw_input=request.arguments or None,
            )  # fmt: skip
            frontend.send(start)
        tool_call = schema.ToolCallUpdate(
            tool_call_id=call_id,
            title=title,
            kind=kind,
            status="pending",
            content=content or None,
            locations=locations,
            raw_input=request.arguments or None,
        )
        options = [
            schema.PermissionOption(option_id=answer, name=name, kind=answer)
            for answer, name in zip(PERMISSION_OPTIONS.values(), OPTION_NAMES, strict=True)
        ]
        chosen = await frontend.request_permission(tool_call, options)
        answer = PERMISSION_OPTIONS.get(chosen, "reject_once")
        if not announced:  # the model's call (if any) ends on its own result
            said = "Allowed." if answer != "reject_once" else "Denied by you."
            frontend.send(
                helpers.update_tool_call(
                    call_id,
                    status="completed" if answer != "reject_once" else "failed",
                    content=[translate.text_content(said)],
                )
            )
        return answer

    async def ask_questions(
        self, run_id: str, questions: list[Question]
    ) -> dict[str, list[str]] | None:
        return None  # ACP v1 has no question with free answers: the model is told so
