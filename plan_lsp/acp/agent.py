"""plan-lsp as an Agent Client Protocol agent: each ACP session is a workspace's session
core (its `cwd`), driven through the same workflow as the LSP server, inside the same walls.

Plan mode maps to ACP's session modes (and the `mode` config option): a session starts in
`plan`; the model's `exit_plan_mode` becomes a `session/request_permission` of kind
`switch_mode` whose content is the full plan text; approving records exactly that text
(sha256) and runs the Do run in `build`, after which the previous permission mode returns.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import RequestError, schema
from pydantic import ValidationError

from plan_lsp import __version__
from plan_lsp.acp import commands, translate
from plan_lsp.acp.approval import approval, run_result
from plan_lsp.acp.frontend import AcpFrontEnd
from plan_lsp.acp.listing import (
    LIST_SESSIONS_MAX,
    saved_conversation,
    saved_session_of,
    stored_sessions,
)
from plan_lsp.acp.setup import SETUP
from plan_lsp.core import ProcessShared, Refused, Workspaces, workflow
from plan_lsp.core.runs import HISTORY_KEEP
from plan_lsp.core.workspace import WorkspaceCore
from plan_lsp.protocol.params import PROMPT_MAX_CHARS, PromptParams
from plan_lsp.protocol.state import PlanStatus, WorkMode
from plan_lsp.session.plans import clean_title

if TYPE_CHECKING:
    from acp.interfaces import Client

log = logging.getLogger(__name__)

PROTOCOL_VERSION = 1
STATE_METHOD = "planLsp/state"
PLANS_METHOD = "planLsp/plans"

# The core's stop reasons as ACP's.
STOP_REASONS: dict[str, schema.StopReason] = {
    "end_turn": "end_turn",
    "plan_submitted": "end_turn",
    "cancelled": "cancelled",
    "timeout": "cancelled",
    "error": "end_turn",
    "max_steps": "max_turn_requests",
    "limit": "max_tokens",
    "context_full": "max_tokens",
}


McpServer = schema.HttpMcpServer | schema.SseMcpServer | schema.AcpMcpServer | schema.McpServerStdio
PromptBlock = (
    schema.TextContentBlock
    | schema.ImageContentBlock
    | schema.AudioContentBlock
    | schema.ResourceContentBlock
    | schema.EmbeddedResourceContentBlock
)


def _refused(message: str) -> RequestError:
    return RequestError.invalid_request({"message": message})


class AcpSession:
    def __init__(self, session_id: str, frontend: AcpFrontEnd, workspaces: Workspaces) -> None:
        self.id = session_id
        self.frontend = frontend
        self.workspaces = workspaces
        self.core: WorkspaceCore = workspaces.get()
        self.turn: asyncio.Task[schema.StopReason] | None = None
        # The client was told the session's title (from its first prompt).
        self.titled = False


class PlanLspAgent:
    """One per connection (`plan-lsp acp`). Each ACP session is a session of its own (its
    conversation, mode, plan and runs), several on one folder if the client likes; what
    must be exclusive (one run changing a folder) the core decides (`core/writing.py`)."""

    def __init__(self, cli_overrides: dict[str, Any] | None = None) -> None:
        self.cli_overrides = dict(cli_overrides or {})
        self.shared = ProcessShared()
        self.sessions: dict[str, AcpSession] = {}
        self.conn: Client | None = None
        # The client declared `fs.readTextFile` (used for the plan's buffer text only).
        self.reads_buffers = False

    def on_connect(self, conn: Client) -> None:
        self.conn = conn

    # -- connection -------------------------------------------------------------------------------

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: schema.ClientCapabilities | None = None,
        client_info: schema.Implementation | None = None,
        **kwargs: Any,
    ) -> schema.InitializeResponse:
        fs = client_capabilities.fs if client_capabilities is not None else None
        self.reads_buffers = bool(fs is not None and fs.read_text_file)
        return schema.InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=schema.AgentCapabilities(
                load_session=True,
                session_capabilities=schema.SessionCapabilities(
                    list=schema.SessionListCapabilities(),
                    resume=schema.SessionResumeCapabilities(),
                    close=schema.SessionCloseCapabilities(),
                    fork=schema.SessionForkCapabilities(),
                ),
                prompt_capabilities=schema.PromptCapabilities(
                    image=False, audio=False, embedded_context=True
                ),
            ),
            agent_info=schema.Implementation(
                name="plan-lsp", title="plan-lsp", version=__version__
            ),
            auth_methods=[SETUP],
        )

    async def authenticate(
        self, method_id: str, **kwargs: Any
    ) -> schema.AuthenticateResponse | None:
        """The set-up runs in the client's terminal (`plan-lsp acp --setup`), which writes
        the user config every new session reads: nothing is left to do here."""
        if method_id != SETUP.id:
            raise RequestError.invalid_params({"methodId": f"unknown: {method_id[:100]!r}"})
        return schema.AuthenticateResponse()

    # -- sessions ---------------------------------------------------------------------------------

    @staticmethod
    def _root(cwd: str) -> Path:
        if not cwd or "\x00" in cwd or not Path(cwd).is_absolute():
            raise RequestError.invalid_params({"cwd": f"not an absolute path: {cwd[:200]!r}"})
        root = Path(cwd).resolve()
        if not root.is_dir():
            raise RequestError.invalid_params({"cwd": f"not a directory: {root}"})
        return root

    def _open(
        self, root: Path, session_id: str, saved: str, mcp_servers: list[McpServer] | None
    ) -> AcpSession:
        """The session `session_id` on `root`, on the saved session `saved` (made when new),
        with the client's MCP servers beside the configured ones."""
        assert self.conn is not None, "no client connected"
        frontend = AcpFrontEnd(self.conn, session_id, root)
        frontend.reads_buffers = self.reads_buffers
        workspaces = Workspaces(frontend, self.cli_overrides, self.shared)
        workspaces.session_id = saved
        workspaces.client_mcp = translate.client_mcp(mcp_servers or [])
        frontend.workspaces = workspaces
        workspaces.set_roots([root])
        # The session's state names the sandbox once its self-test answers.
        workspaces.follow_sandbox()
        session = AcpSession(session_id, frontend, workspaces)
        self.sessions[session_id] = session
        return session

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[McpServer] | None = None,
        **kwargs: Any,
    ) -> schema.NewSessionResponse:
        root = self._root(cwd)
        session_id = f"conv-{uuid.uuid4().hex[:8]}"
        session = self._open(root, session_id, session_id, mcp_servers)
        commands.tell(session.frontend)
        mode = session.core.session.mode.value
        return schema.NewSessionResponse(
            session_id=session_id,
            modes=translate.mode_state(mode),
            config_options=translate.config_options(mode),
        )

    def _restore(
        self, cwd: str, session_id: str, mcp_servers: list[McpServer] | None
    ) -> AcpSession:
        """The session `session_id` of the folder `cwd`: open here already, or restored
        from the folder's state."""
        root = self._root(cwd)
        known = self.sessions.get(session_id)
        if known is not None:
            if known.core.root != root:
                raise _refused(f"session {session_id} is open on {known.core.root}, not {root}")
            return known
        saved = saved_session_of(root, session_id)
        if saved is None:
            raise RequestError.resource_not_found(session_id)
        for other in self.sessions.values():
            if other.core.root == root and other.core.session.id == saved:
                raise _refused(
                    f"session {session_id} is kept with session {other.id}, open in this "
                    "process: close that one first"
                )
        session = self._open(root, session_id, saved, mcp_servers)
        session.titled = True
        if session.core.session.conversation != session_id:
            session.core.session.switch_conversation(session_id, "loaded by the ACP client")
        return session

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[McpServer] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> schema.LoadSessionResponse | None:
        session = self._restore(cwd, session_id, mcp_servers)
        core = session.core
        session.frontend.replay(core.runs.history())
        return schema.LoadSessionResponse(**await self._opened(session))

    async def resume_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[McpServer] | None = None,
        **kwargs: Any,
    ) -> schema.ResumeSessionResponse:
        """As `session/load`, without the conversation sent again."""
        session = self._restore(cwd, session_id, mcp_servers)
        return schema.ResumeSessionResponse(**await self._opened(session))

    async def _opened(self, session: AcpSession) -> dict[str, Any]:
        commands.tell(session.frontend)
        for found in session.frontend.walk.usage_changed(session.core.state()):
            session.frontend.send(found)
        await session.frontend.drained()
        mode = session.core.session.mode.value
        return {
            "modes": translate.mode_state(mode),
            "config_options": translate.config_options(mode),
        }

    def _session(self, session_id: str) -> AcpSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.resource_not_found(session_id)
        return session

    # -- modes ------------------------------------------------------------------------------------

    async def _switch(self, session: AcpSession, mode: str) -> None:
        if mode not in (WorkMode.PLAN.value, WorkMode.BUILD.value):
            raise RequestError.invalid_params({"modeId": f"unknown mode {mode[:50]!r}"})
        try:
            await workflow.set_mode(session.core, WorkMode(mode))
        except Refused as exc:
            raise _refused(str(exc)) from exc
        await session.frontend.drained()

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> schema.SetSessionModeResponse | None:
        await self._switch(self._session(session_id), mode_id)
        return schema.SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> schema.SetSessionConfigOptionResponse | None:
        session = self._session(session_id)
        if config_id != translate.MODE_OPTION_ID or not isinstance(value, str):
            raise RequestError.invalid_params({"configId": f"unknown option {config_id[:50]!r}"})
        await self._switch(session, value)
        return schema.SetSessionConfigOptionResponse(
            config_options=translate.config_options(session.core.session.mode.value)
        )

    # -- prompts ----------------------------------------------------------------------------------

    async def prompt(
        self, session_id: str, prompt: list[PromptBlock], **kwargs: Any
    ) -> schema.PromptResponse:
        session = self._session(session_id)
        if session.turn is not None and not session.turn.done():
            raise _refused("a prompt is in progress in this session; cancel it first")
        text = prompt_text(prompt)
        try:
            PromptParams(text=text)
        except ValidationError as exc:
            why = f"a prompt is 1 to {PROMPT_MAX_CHARS:,} characters, this one {len(text):,}"
            raise RequestError.invalid_params({"prompt": why}) from exc
        if not session.titled:  # a session's title is its first prompt, as listed
            session.titled = True
            title = clean_title(text) or None
            session.frontend.send(
                schema.SessionInfoUpdate(session_update="session_info_update", title=title)
            )
        session.frontend.cancelled.clear()
        session.turn = asyncio.ensure_future(self._turn(session, text))
        try:
            stop = await asyncio.shield(session.turn)
        finally:
            await session.frontend.drained()
        return schema.PromptResponse(stop_reason=stop)

    async def _turn(self, session: AcpSession, text: str) -> schema.StopReason:
        core = session.core
        stop: str
        try:
            command = commands.parse(text)
            if command is not None:
                stop = await commands.run(core, session.frontend, *command)
            elif (
                core.session.plan_status is PlanStatus.REJECTED
                and core.session.mode is WorkMode.PLAN
            ):
                # "Keep planning": this message is the feedback the plan is revised with.
                await workflow.reject(core, text)
                stop = await run_result(core)
            else:
                stop = (await workflow.prompt(core, text)).stopReason
            while stop == "plan_submitted" and not session.frontend.cancelled.is_set():
                stop = await approval(session.core, session.frontend)
        except Refused as exc:
            session.frontend.show(str(exc))
            return "end_turn"
        if session.frontend.cancelled.is_set():
            return "cancelled"
        return STOP_REASONS.get(stop, "end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self.sessions.get(session_id)
        if session is None:
            return
        session.frontend.cancelled.set()
        await session.core.runs.cancel(None)

    async def close_session(
        self, session_id: str, **kwargs: Any
    ) -> schema.CloseSessionResponse | None:
        session = self.sessions.pop(session_id, None)
        if session is not None:
            await session.workspaces.close()
        return None

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> schema.ListSessionsResponse:
        """The sessions `session/load` can open: the conversations kept in the state of the
        folder `cwd` (without `cwd`: of the folders open in this process), newest first,
        titled by their first prompt. One page: no cursor is ever given out."""
        if cwd is None:
            roots = list(dict.fromkeys(s.core.root for s in self.sessions.values()))
        else:
            if "\x00" in cwd or not Path(cwd).is_absolute():
                raise RequestError.invalid_params({"cwd": f"not an absolute path: {cwd[:200]!r}"})
            roots = [Path(cwd).resolve()]
        sessions = [info for root in roots for info in stored_sessions(root)]
        return schema.ListSessionsResponse(sessions=sessions[:LIST_SESSIONS_MAX])

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[McpServer] | None = None,
        **kwargs: Any,
    ) -> schema.ForkSessionResponse:
        """A new session that goes on from the conversation `session_id` (a copy: each goes
        its own way from here), in plan mode with no plan: the plan, its approval and the
        runs of the other session stay with it."""
        root = self._root(cwd)
        known = self.sessions.get(session_id)
        if known is not None:
            await known.frontend.drained()
        saved = saved_conversation(root, session_id, HISTORY_KEEP)
        if saved is None:
            raise RequestError.resource_not_found(session_id)
        new_id = f"conv-{uuid.uuid4().hex[:8]}"
        session = self._open(root, new_id, new_id, mcp_servers)
        core = session.core.session
        messages, shown = saved
        for message in messages:
            core.store.append_message(core.id, core.conversation, "forked", message)
        for payload in shown:
            core.store.append_history(core.id, core.conversation, payload, HISTORY_KEEP)
        session.titled = True
        return schema.ForkSessionResponse(session_id=new_id, **await self._opened(session))

    # -- extensions -------------------------------------------------------------------------------

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method not in (STATE_METHOD, PLANS_METHOD):
            raise RequestError.method_not_found(f"_{method}")
        session_id = params.get("sessionId")
        if not isinstance(session_id, str):
            raise RequestError.invalid_params({"sessionId": "required (a string)"})
        core = self._session(session_id).core
        if method == PLANS_METHOD:
            return workflow.plans(core).model_dump(mode="json")
        return core.state().model_dump(mode="json")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    async def close(self) -> None:
        for session in list(self.sessions.values()):
            await session.workspaces.close()
        self.sessions.clear()


def prompt_text(blocks: list[Any]) -> str:
    """A prompt's content blocks as the text the model reads: text as it is, a resource
    link as its URI, an embedded text resource fenced with its URI."""
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, schema.TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, schema.ResourceContentBlock):
            parts.append(f"@{block.uri}")
        elif isinstance(block, schema.EmbeddedResourceContentBlock):
            resource = block.resource
            if isinstance(resource, schema.TextResourceContents):
                parts.append(f"\n{resource.uri}:\n```\n{resource.text}\n```\n")
    return "\n".join(p for p in parts if p)
