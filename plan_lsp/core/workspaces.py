"""The workspaces one front-end connection works in: a core per folder, created when first
needed; the first folder is the default for requests naming none. Also the one safe writer
for files the server itself writes."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from plan_lsp.config import load_config
from plan_lsp.core import writing
from plan_lsp.core.frontend import FrontEnd, ProcessShared
from plan_lsp.core.workspace import WorkspaceCore
from plan_lsp.policy.sandbox_probe import on_sandbox_known
from plan_lsp.session import Session, StateStore
from plan_lsp.tools.mcp.config import McpConfigProblem, McpSettings


class ClientMcpServer(BaseModel):
    """An MCP server the client names (ACP `session/new.mcpServers`), in the config's terms,
    checked with the configured ones; `refused`: one of a kind not supported, and why."""

    model_config = ConfigDict(frozen=True)

    name: str
    command: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    read_only_tools: list[str] = Field(default_factory=list)
    refused: str | None = None


class Workspaces:
    def __init__(
        self,
        frontend: FrontEnd,
        cli_overrides: dict[str, object] | None = None,
        shared: ProcessShared | None = None,
    ) -> None:
        self.frontend = frontend
        self.cli_overrides: dict[str, object] = dict(cli_overrides or {})
        self.shared = shared or ProcessShared()
        self.init_options: dict[str, object] = {}
        self.roots: list[Path] = []
        self._cores: dict[Path, WorkspaceCore] = {}
        self.on_created: list[Callable[[WorkspaceCore], None]] = []
        # The saved session the cores restore (None: each folder's latest).
        self.session_id: str | None = None
        # MCP servers the client adds to the configured ones (ACP `session/new`), in the
        # config's form; `{"name", "refused"}`: one of a kind not supported, and why.
        self.client_mcp: list[ClientMcpServer] = []

    def set_roots(self, roots: list[Path]) -> None:
        seen: list[Path] = []
        for r in roots:
            resolved = r.resolve()
            if resolved not in seen:
                seen.append(resolved)
        self.roots = seen

    def get(self, root: Path | None = None) -> WorkspaceCore:
        if root is None:
            if not self.roots:
                raise LookupError("no workspace folder is open")
            root = self.roots[0]
        root = root.resolve()
        core = self._cores.get(root)
        if core is None:
            core = self._create(root)
            self._cores[root] = core
            for hook in self.on_created:
                hook(core)
        return core

    def follow_sandbox(self) -> None:
        """Describe every workspace again once the sandbox self-test answers (each pushes
        its state); until then they report the shell protection as being checked."""
        loop = asyncio.get_running_loop()

        def known() -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody to tell
                loop.call_soon_threadsafe(self._sandbox_known)

        on_sandbox_known(known)

    def _sandbox_known(self) -> None:
        for core in self._cores.values():
            core.describe()

    def created(self) -> list[WorkspaceCore]:
        return list(self._cores.values())

    def all(self) -> list[WorkspaceCore]:
        return [self.get(r) for r in self.roots]

    def find_for_path(self, path: Path) -> WorkspaceCore | None:
        best: Path | None = None
        for root in self.roots:
            if path == root or root in path.parents:
                if best is None or len(root.parts) > len(best.parts):
                    best = root
        return self.get(best) if best is not None else None

    def _create(self, root: Path) -> WorkspaceCore:
        config, warnings = load_config(root, self.init_options, self.cli_overrides)
        for w in warnings:
            self.frontend.show(w, warning=True)
        if self.client_mcp:
            config = config.model_copy(update={"mcp": _with_client(config.mcp, self.client_mcp)})
        store = StateStore.for_workspace(root, warn=self.frontend.show)
        session_id = self.session_id
        # A second window on the folder starts a session of its own (`core/writing.py`).
        busy = writing.other_window(store, root) if session_id is None else None
        if busy is not None:
            session_id = writing.new_session_id()
        session = Session(
            store,
            root,
            config.plans_path(root),
            default_permission_mode=config.permission_mode,
            default_mode=config.mode,
            session_id=session_id,
        )
        writing.hold_session(store, session.id)
        session.held_elsewhere = lambda: writing.live_rounds(store, session.id)
        if busy is not None:
            self.frontend.show(
                f"plan-lsp: this folder's {busy} is open in another window: this window "
                f"starts session {session.id}. The plans in the plans folder are the "
                "folder's, seen by both; one run changes the folder at a time."
            )
        core = WorkspaceCore(root, config, store, session, warnings, self.frontend, self.shared)
        core.describe()
        return core

    def write_file(self, path: Path, text: str) -> None:
        """Every file the server itself writes goes through the one safe writer: plan files
        as plan files (validated, below `.plan-lsp/`, no link on the way), anything else
        inside a workspace folder but never inside `.plan-lsp/`. Raises OSError."""
        from plan_lsp.policy.plan_paths import write_plan_file
        from plan_lsp.policy.safe_fs import WriteRefused, write_text
        from plan_lsp.policy.server_dir import server_dir_refusal
        from plan_lsp.policy.workspace_edit import anchor_of

        core = self.find_for_path(path)
        if core is None:
            raise WriteRefused(f"{path} is outside every workspace folder")
        if path.parent == core.plans_dir or core.plans_dir in path.parents:
            write_plan_file(core.plans_dir, path, text, workspace=core.root)
            return
        refusal = server_dir_refusal(path, self.roots)
        anchor = anchor_of(path, self.roots)
        if refusal is not None or anchor is None:
            raise WriteRefused(refusal or f"{path} is outside every workspace folder")
        write_text(anchor, path, text)

    async def close(self) -> None:
        for core in self._cores.values():
            await core.close()
            writing.release_session(core.store, core.session.id)


def _with_client(configured: McpSettings, client: list[ClientMcpServer]) -> McpSettings:
    """The configured MCP servers and the client's, checked and gated alike (a clash of
    names, a bad entry: a failed server with the reason); a client server's read-only
    tools: those the client lists, and those the user config lists for it by name."""
    refused = [McpConfigProblem(name=e.name, error=e.refused) for e in client if e.refused]
    entries = [s.model_dump() for s in configured.servers]
    for entry in (e for e in client if not e.refused):
        listed = configured.client_read_only_tools.get(entry.name, [])
        tools = [*entry.read_only_tools, *listed]
        entries.append({**entry.model_dump(exclude={"refused"}), "read_only_tools": tools})
    both = McpSettings.model_validate(
        {"servers": entries, "client_read_only_tools": configured.client_read_only_tools}
    )
    return both.model_copy(update={"invalid": [*configured.invalid, *both.invalid, *refused]})
