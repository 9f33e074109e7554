"""One workspace's core: its configuration, state store, session, runs, model provider and
MCP tool sources. Each folder has its own provider (its own model, base URL and key may
differ); the scripted provider alone is shared by the process (`ProcessShared`)."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plan_lsp.config import Config
from plan_lsp.core.after_do import AfterDo
from plan_lsp.core.frontend import FrontEnd, ProcessShared
from plan_lsp.core.protection import effective_plan_shell, shell_protection_text
from plan_lsp.core.runs import RunManager
from plan_lsp.core.stepping import Stepping
from plan_lsp.plan.checklist import without_checklist_marks
from plan_lsp.policy.safe_fs import disk_text
from plan_lsp.policy.sandbox_probe import sandbox_status, sandbox_status_nowait
from plan_lsp.protocol.state import ProviderInfo, SessionState
from plan_lsp.session import Session, StateStore

if TYPE_CHECKING:
    from plan_lsp.providers.base import Provider, ProviderError
    from plan_lsp.tools.mcp.manager import McpManager

log = logging.getLogger(__name__)

_OFFICIAL_HOSTS = ("https://api.openai.com", "https://api.anthropic.com")


class _UnusableProvider:
    """Stands in when the configured provider cannot be built: every run reports why."""

    name = "unavailable"

    def __init__(self, error: ProviderError) -> None:
        self.error = error

    def stream(self, request: Any) -> Any:
        raise self.error

    async def check(self) -> str:
        raise self.error

    async def context_window(self) -> int | None:
        return None


class WorkspaceCore:
    """The session core of one workspace folder; a front-end drives it through
    `core/workflow.py` and hears from it through its `FrontEnd`."""

    def __init__(
        self,
        root: Path,
        config: Config,
        store: StateStore,
        session: Session,
        warnings: list[str],
        frontend: FrontEnd,
        shared: ProcessShared,
    ) -> None:
        self.root = root
        self.config = config
        self.store = store
        self.session = session
        self.config_warnings = warnings
        self.frontend = frontend
        self.shared = shared
        self._provider: Provider | None = None
        self.runs = RunManager(self)
        self.stepping = Stepping(self)
        self.after_do = AfterDo(self)
        self.mcp = self._make_mcp()

    @property
    def plan_shell(self) -> str:
        """The protection in force; waits for the sandbox self-test if it still runs (runs
        await `sandbox_ready()` first, so this never blocks the event loop there)."""
        level = effective_plan_shell(self.config, sandbox_status())
        assert level is not None
        return level

    @property
    def plans_dir(self) -> Path:
        return self.config.plans_path(self.root)

    def state(self) -> SessionState:
        return self.session.state()

    def rel(self, path: Path | str) -> str:
        """`path` relative to the workspace, for messages (itself when outside)."""
        try:
            return str(Path(path).resolve().relative_to(self.root))
        except ValueError:
            return str(path)

    # -- the plan as the user sees it ---------------------------------------------------------

    def plan_text(self, path: Path) -> str:
        """The plan as the user sees it: the open buffer, else the file."""
        text = self.frontend.buffer_text(path)
        if text is not None:
            return text
        return disk_text(path) or ""  # never through a link, never blocked on, bounded

    def differs_from_approved(self, text: str) -> bool:
        """`text` is not the approved plan. Checklist progress (the server's own mirroring
        of todos, or the user ticking a box) is not a change of the plan."""
        approved = self.session.approved
        return approved is not None and without_checklist_marks(text) != without_checklist_marks(
            approved.text
        )

    def approved_text_changed(self, text: str) -> None:
        """The user changed the plan after approval."""
        if self.differs_from_approved(text):
            self.session.approved_text_changed(text)

    # -- MCP tool sources -----------------------------------------------------------------------

    def _make_mcp(self) -> McpManager | None:
        """The workspace's MCP tool sources (user-level configuration only); their status is
        part of the session's state. Servers start when the first run needs their tools."""
        if not self.config.mcp.configured and not self.config.mcp.invalid:
            return None
        from plan_lsp.tools.mcp.manager import McpManager

        manager = McpManager(
            self.config.mcp,
            self.root,
            notify=lambda message: self.runs.notify({"kind": "error", "message": message}),
        )
        manager.add_listener(self._mcp_changed)
        return manager

    def _mcp_changed(self) -> None:
        if self.mcp is not None:
            self.session.set_context(mcpServers=self.mcp.status())

    # -- the model provider -------------------------------------------------------------------

    def provider(self) -> Provider:
        if self._provider is None:
            self._provider = self._make_provider()
        return self._provider

    def build_provider(self, model: str | None = None) -> Provider:
        """The configured model provider, for `model` (the configured model when None);
        raises ProviderError when it cannot be made."""
        from plan_lsp.providers.factory import make_provider

        cfg = self.config
        return make_provider(
            cfg.provider,
            model=model or cfg.model,
            base_url=cfg.base_url,
            api_key=cfg.api_key.get_secret_value() if cfg.api_key else None,
            script=cfg.script,
            transcript=cfg.transcript,
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            chat_roles=cfg.chat_roles,
            context_window=cfg.context_window,
        )

    def _make_provider(self) -> Provider:
        cfg = self.config
        if cfg.provider == "scripted" and self.shared.scripted is not None:
            return self.shared.scripted
        from plan_lsp.providers.base import ProviderError

        provider: Provider
        try:
            provider = self.build_provider()
        except ProviderError as exc:
            self.frontend.show(f"plan-lsp: the model provider is not usable: {exc.message}")
            provider = _UnusableProvider(exc)
        if cfg.provider == "scripted":
            self.shared.scripted = provider
        return provider

    def provider_info(self, environ: dict[str, str] | None = None) -> ProviderInfo:
        """What the model back end is and what keeps it from working, without contacting it
        (the connection test does that)."""
        from plan_lsp.providers.defaults import DEFAULT_MODELS

        env = os.environ if environ is None else environ
        cfg = self.config
        name, base_url = cfg.provider, cfg.base_url
        own_server = base_url is not None and not base_url.startswith(_OFFICIAL_HOSTS)
        model = cfg.model or (None if own_server else DEFAULT_MODELS.get(name))
        problem: str | None = None
        if name == "scripted":
            if cfg.script is None:
                problem = "the scripted provider needs a script file (script)"
        else:
            key_var = "OPENAI_API_KEY" if name == "openai" else "ANTHROPIC_API_KEY"
            has_key = cfg.api_key is not None or bool(env.get(key_var))
            if own_server and cfg.model is None:
                problem = (
                    f"no model is set: {base_url} is not {name}'s own service, so there is no "
                    "default model; set model to one your server serves"
                )
            elif not own_server and not has_key:
                problem = (
                    f"no API key for {name}: set apiKey (or {key_var}), or set baseUrl to a "
                    "local OpenAI-compatible server such as Ollama"
                )
        return ProviderInfo(
            name=name, model=model, baseUrl=base_url, configured=problem is None, problem=problem
        )

    def describe(self) -> None:
        """Tell the session what surrounds it; its listeners push the state."""
        status = sandbox_status_nowait()
        level = effective_plan_shell(self.config, status)
        self.session.set_context(
            shellProtection=shell_protection_text(self.config, status),
            planShell=level,
            sandbox=status.mechanism if status is not None and level == "sandboxed" else None,
            planNetwork=self.config.plan_network,
            provider=self.provider_info(),
            configWarnings=self.config_warnings,
        )
        self._mcp_changed()

    async def close(self) -> None:
        await self.runs.close()
        if self.mcp is not None:
            await self.mcp.close()
        self.store.close()
