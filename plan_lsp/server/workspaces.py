"""One context per workspace folder: its configuration, state store, session, runs and model
provider. Each folder has its own provider (its own model, base URL and key may differ);
the scripted provider alone is shared by the process, because the script belongs to it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plan_lsp.config import Config, load_config
from plan_lsp.policy.sandbox.selftest import PROOF
from plan_lsp.policy.sandbox_probe import (
    SandboxStatus,
    on_sandbox_known,
    sandbox_status,
    sandbox_status_nowait,
)
from plan_lsp.server.runs import RunManager
from plan_lsp.session import Session, StateStore
from plan_lsp.session.model import McpServerStatus, ProviderInfo

if TYPE_CHECKING:
    from plan_lsp.providers.base import Provider, ProviderError
    from plan_lsp.server.app import PlanLanguageServer
    from plan_lsp.tools.mcp.manager import McpManager

log = logging.getLogger(__name__)

_OFFICIAL_HOSTS = ("https://api.openai.com", "https://api.anthropic.com")


def effective_plan_shell(config: Config, status: SandboxStatus | None) -> str | None:
    """The plan-mode shell protection in force: the configured level, with "sandboxed" only
    where a sandbox proved itself (else "classified"); None while the self-test that
    decides it still runs."""
    configured = config.plan_shell
    if configured in ("off", "classified"):
        return configured
    if status is None:
        return None
    return "sandboxed" if status.mechanism else "classified"


def shell_protection_text(config: Config, status: SandboxStatus | None) -> str:
    """One line for humans: the level in force, what enforces it, and why a sandbox is not
    used when one was wanted (the self-test's own words)."""
    level = effective_plan_shell(config, status)
    if level == "off":
        return "off: no shell in plan mode"
    if config.plan_shell == "classified":
        return "classified: allow-list classifier only (set by the user)"
    if status is None:
        return "checking: the sandbox self-test is running; plan-mode commands wait for it"
    network = ", network allowed" if config.plan_network else ", no network"
    if level == "sandboxed":
        proven = f"; self-test: {PROOF}" if PROOF in status.detail else ""
        return f"sandboxed: {status.mechanism} (read-only{network}) + classifier{proven}"
    return f"classified: allow-list classifier only; no sandbox here ({status.detail})"


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


class WorkspaceContext:
    def __init__(
        self,
        ls: PlanLanguageServer,
        root: Path,
        config: Config,
        store: StateStore,
        session: Session,
        warnings: list[str],
    ) -> None:
        self.ls = ls
        self.root = root
        self.config = config
        self.store = store
        self.session = session
        self.config_warnings = warnings
        self._provider: Provider | None = None
        self.runs = RunManager(ls, self)
        self.mcp = self._make_mcp()

    @property
    def plan_shell(self) -> str:
        """The protection in force; waits for the sandbox self-test if it still runs (runs
        await `sandbox_ready()` first, so this never blocks the event loop there)."""
        level = effective_plan_shell(self.config, sandbox_status())
        assert level is not None
        return level

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
            states = [McpServerStatus(**s.model_dump(mode="json")) for s in self.mcp.status()]
            self.session.set_context(mcpServers=states)

    @property
    def plans_dir(self) -> Path:
        return self.config.plans_path(self.root)

    def provider(self) -> Provider:
        if self._provider is None:
            self._provider = self._make_provider()
        return self._provider

    def _make_provider(self) -> Provider:
        cfg = self.config
        if cfg.provider == "scripted" and self.ls.shared_scripted is not None:
            return self.ls.shared_scripted
        from plan_lsp.providers.base import ProviderError
        from plan_lsp.providers.factory import make_provider

        provider: Provider
        try:
            provider = make_provider(
                cfg.provider,
                model=cfg.model,
                base_url=cfg.base_url,
                api_key=cfg.api_key.get_secret_value() if cfg.api_key else None,
                script=cfg.script,
                transcript=cfg.transcript,
                temperature=cfg.temperature,
                max_tokens=cfg.max_tokens,
            )
        except ProviderError as exc:
            self.ls.client.show(f"plan-lsp: the model provider is not usable: {exc.message}")
            provider = _UnusableProvider(exc)
        if cfg.provider == "scripted":
            self.ls.shared_scripted = provider
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


class Workspaces:
    """Creates contexts lazily; the first folder is the default for requests naming none."""

    def __init__(self, ls: PlanLanguageServer) -> None:
        self.ls = ls
        self.init_options: dict[str, Any] = {}
        self.roots: list[Path] = []
        self._contexts: dict[Path, WorkspaceContext] = {}
        self.on_created: list[Callable[[WorkspaceContext], None]] = []

    def set_roots(self, roots: list[Path]) -> None:
        seen: list[Path] = []
        for r in roots:
            resolved = r.resolve()
            if resolved not in seen:
                seen.append(resolved)
        self.roots = seen

    def get(self, root: Path | None = None) -> WorkspaceContext:
        if root is None:
            if not self.roots:
                raise LookupError("no workspace folder is open")
            root = self.roots[0]
        root = root.resolve()
        ctx = self._contexts.get(root)
        if ctx is None:
            ctx = self._create(root)
            self._contexts[root] = ctx
            for hook in self.on_created:
                hook(ctx)
        return ctx

    def follow_sandbox(self) -> None:
        """Describe every workspace again once the sandbox self-test answers (each pushes
        its state); until then they report the shell protection as being checked."""
        loop = asyncio.get_running_loop()

        def known() -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody to tell
                loop.call_soon_threadsafe(self._sandbox_known)

        on_sandbox_known(known)

    def _sandbox_known(self) -> None:
        for ctx in self._contexts.values():
            ctx.describe()

    def created(self) -> list[WorkspaceContext]:
        return list(self._contexts.values())

    def all(self) -> list[WorkspaceContext]:
        return [self.get(r) for r in self.roots]

    def find_for_path(self, path: Path) -> WorkspaceContext | None:
        best: Path | None = None
        for root in self.roots:
            if path == root or root in path.parents:
                if best is None or len(root.parts) > len(best.parts):
                    best = root
        return self.get(best) if best is not None else None

    def _create(self, root: Path) -> WorkspaceContext:
        config, warnings = load_config(root, self.init_options, self.ls.cli_overrides)
        for w in warnings:
            self.ls.client.show(w, kind=_warning())
        store = StateStore(root / ".plan-lsp" / "state.db", warn=self.ls.client.show)
        session = Session(
            store,
            root,
            config.plans_path(root),
            default_permission_mode=config.permission_mode,
            default_mode=config.mode,
        )
        ctx = WorkspaceContext(self.ls, root, config, store, session, warnings)
        ctx.describe()
        return ctx

    async def close(self) -> None:
        for ctx in self._contexts.values():
            await ctx.close()


def _warning() -> Any:
    from lsprotocol import types

    return types.MessageType.Warning
