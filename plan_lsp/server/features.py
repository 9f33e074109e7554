"""What the server offers, registered at start-up as light stubs (DESIGN.md §6, §7).

The stubs dispatch to `server/lazy.py`'s implementations, imported on first use; the
initialize handler itself stays free of heavy imports.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from plan_lsp.server.app import PlanLanguageServer, workspace_roots_from
from plan_lsp.server.plain import to_plain

CODE_ACTION_OPTIONS = types.CodeActionOptions(
    code_action_kinds=[types.CodeActionKind.Source, types.CodeActionKind.QuickFix]
)

# Handlers answered synchronously (in message order: a didChange is applied before the
# request that follows it), and those that await.
SYNC_FEATURES: list[tuple[str, Any]] = [
    ("planLsp/state", None),
    ("planLsp/setPermissionMode", None),
    ("planLsp/planRevisions", None),
    ("planLsp/history", None),
    ("planLsp/newSession", None),
    (types.TEXT_DOCUMENT_DID_OPEN, None),
    (types.TEXT_DOCUMENT_DID_CHANGE, None),
    (types.TEXT_DOCUMENT_DID_CLOSE, None),
    (types.TEXT_DOCUMENT_CODE_LENS, None),
    (types.TEXT_DOCUMENT_CODE_ACTION, CODE_ACTION_OPTIONS),
]
ASYNC_FEATURES = [
    types.SHUTDOWN,
    "planLsp/setMode",
    "planLsp/toggleMode",
    "planLsp/prompt",
    "planLsp/cancel",
    "planLsp/approvePlan",
    "planLsp/rejectPlan",
    "planLsp/testConnection",
]
SYNC_COMMANDS: list[str] = []
ASYNC_COMMANDS = [
    "planLsp.approvePlan",
    "planLsp.rejectPlan",
    "planLsp.showPreviousRevision",
    "planLsp.toggleMode",
]


def _sync_feature(ls: PlanLanguageServer, name: str, options: Any) -> None:
    def stub(ls: PlanLanguageServer, params: Any) -> Any:
        return ls.implementations.features[name](ls, params)

    ls.feature(name, options)(stub) if options is not None else ls.feature(name)(stub)


def _async_feature(ls: PlanLanguageServer, name: str) -> None:
    async def stub(ls: PlanLanguageServer, params: Any) -> Any:
        return await ls.implementations.features[name](ls, params)

    ls.feature(name)(stub)


def _sync_command(ls: PlanLanguageServer, name: str) -> None:
    def stub(ls: PlanLanguageServer, *args: Any) -> Any:
        return ls.implementations.commands[name](ls, *args)

    ls.command(name)(stub)


def _async_command(ls: PlanLanguageServer, name: str) -> None:
    async def stub(ls: PlanLanguageServer, *args: Any) -> Any:
        return await ls.implementations.commands[name](ls, *args)

    ls.command(name)(stub)


def register(ls: PlanLanguageServer) -> None:
    @ls.feature(types.INITIALIZE)
    def on_initialize(ls: PlanLanguageServer, params: types.InitializeParams) -> None:
        opts = to_plain(params.initialization_options) if params.initialization_options else {}
        ls.init_options = opts if isinstance(opts, dict) else {}
        level = ls.init_options.get("logLevel", ls.init_options.get("log_level"))
        if level in ("debug", "info", "warning", "error") and not ls.cli_overrides.get("log_level"):
            from plan_lsp.logs import set_log_level

            set_log_level(level)
        ls.roots = workspace_roots_from(params, ls.default_root)

    @ls.feature(types.INITIALIZED)
    def on_initialized(ls: PlanLanguageServer, params: types.InitializedParams) -> None:
        ls.implementations.features[types.INITIALIZED](ls, params)

    for name, options in SYNC_FEATURES:
        _sync_feature(ls, name, options)
    for name in ASYNC_FEATURES:
        _async_feature(ls, name)
    for name in SYNC_COMMANDS:
        _sync_command(ls, name)
    for name in ASYNC_COMMANDS:
        _async_command(ls, name)
