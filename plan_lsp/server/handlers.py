"""The one place where LSP methods and commands are registered: one handler per method, each
handing over to the feature that owns what it touches. The initialize answer advertises
exactly what is registered here."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any

from lsprotocol import types

from plan_lsp import startup
from plan_lsp.core import Refused
from plan_lsp.server import methods, review_commands, step_commands
from plan_lsp.server.app import ADVERTISED, PlanLanguageServer, workspace_roots_from
from plan_lsp.server.params import RequestFailed
from plan_lsp.server.plain import to_plain
from plan_lsp.session import TransitionRefused
from plan_lsp.tools.paths import PathRefused

Handler = Callable[[PlanLanguageServer, Any], Any]

WATCH_DELAY_S = 0.5
# Start-up ends with the first workspaces up, or this long after `initialize` at the latest.
SETTLE_LATEST_S = 10.0

# Custom requests: answered in message order when synchronous (a didChange is applied before
# the request that follows it), awaited when asynchronous.
REQUESTS: dict[str, Handler] = {
    "planLsp/state": methods.get_state,
    "planLsp/compact": methods.compact,
    "planLsp/setMode": methods.set_mode,
    "planLsp/toggleMode": methods.toggle_mode,
    "planLsp/setPermissionMode": methods.set_permission_mode,
    "planLsp/prompt": methods.prompt,
    "planLsp/cancel": methods.cancel,
    "planLsp/retry": methods.retry,
    "planLsp/approvePlan": methods.approve,
    "planLsp/rejectPlan": methods.reject,
    "planLsp/planRevisions": methods.plan_revisions,
    "planLsp/plans": methods.plans,
    "planLsp/history": methods.history,
    "planLsp/newSession": methods.new_session,
    "planLsp/testConnection": methods.test_connection,
    "planLsp/checkpoints": methods.checkpoints,
    "planLsp/revert": methods.revert,
    "planLsp/redo": methods.redo,
}
# `workspace/executeCommand` commands take the same params object as their request.
COMMANDS: dict[str, Handler] = {
    "planLsp.approvePlan": methods.approve,
    "planLsp.rejectPlan": methods.reject,
    "planLsp.toggleMode": methods.toggle_mode,
    "planLsp.showPreviousRevision": methods.show_previous_revision,
}
# Plan review: comments, the second reader; approval asks first about open comments.
REQUESTS.update(review_commands.REQUESTS), COMMANDS.update(review_commands.COMMANDS)
# Steps of the approved plan: run the next one or the rest, show a step's changes.
REQUESTS.update(step_commands.REQUESTS), COMMANDS.update(step_commands.COMMANDS)

CODE_ACTION_OPTIONS = types.CodeActionOptions(
    code_action_kinds=[types.CodeActionKind.Source, types.CodeActionKind.QuickFix]
)


# What a request may meet that refuses it rather than fails it: the core's refusals, a
# transition the session does not allow, a path the tools refuse, and the filesystem's
# refusals (the safe reader's and writer's `WriteRefused` — a link, a FIFO, a file too large
# — and the system's own, e.g. a folder the user cannot write).
REFUSALS = (Refused, TransitionRefused, PathRefused, OSError)


def _reason(exc: BaseException) -> str:
    """What was refused and why, as a person reads it (never an exception's class name)."""
    if isinstance(exc, OSError) and exc.strerror:  # the system's: not "[Errno 13] ..."
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    return str(exc) or "the server refused the request"


def answered(handler: Handler) -> Handler:
    """`handler` with its refusals (`REFUSALS`) answered as LSP's RequestFailed, the reason
    its message, instead of an internal error naming a Python exception."""
    if inspect.iscoroutinefunction(handler):

        @wraps(handler)
        async def run_async(ls: PlanLanguageServer, params: Any) -> Any:
            try:
                return await handler(ls, params)
            except REFUSALS as exc:
                raise RequestFailed(_reason(exc)) from exc

        return run_async

    @wraps(handler)
    def run(ls: PlanLanguageServer, params: Any) -> Any:
        try:
            return handler(ls, params)
        except REFUSALS as exc:
            raise RequestFailed(_reason(exc)) from exc

    return run


def _register_request(ls: PlanLanguageServer, name: str, handler: Handler) -> None:
    ls.feature(name)(answered(handler))


def _register_command(ls: PlanLanguageServer, name: str, handler: Handler) -> None:
    handler = answered(handler)
    if inspect.iscoroutinefunction(handler):

        async def run_async(ls: PlanLanguageServer, *args: Any) -> Any:
            return await handler(ls, args[0] if args else {})

        ls.command(name)(run_async)
    else:

        def run(ls: PlanLanguageServer, *args: Any) -> Any:
            return handler(ls, args[0] if args else {})

        ls.command(name)(run)


def register(ls: PlanLanguageServer) -> None:
    for name, handler in REQUESTS.items():
        _register_request(ls, name, handler)
    for name, handler in COMMANDS.items():
        _register_command(ls, name, handler)
    ADVERTISED["methods"] = list(REQUESTS)
    ADVERTISED["commands"] = list(COMMANDS)

    @ls.feature(types.INITIALIZE)
    def on_initialize(ls: PlanLanguageServer, params: types.InitializeParams) -> None:
        options = to_plain(params.initialization_options) if params.initialization_options else {}
        ls.workspaces.init_options = options if isinstance(options, dict) else {}
        ls.workspaces.set_roots(workspace_roots_from(params, ls.default_root))
        ls.workspaces.follow_sandbox()
        asyncio.get_running_loop().call_later(SETTLE_LATEST_S, startup.settle)
        ls.client.initialized(params)
        level = ls.workspaces.init_options.get("logLevel")
        if level in ("debug", "info", "warning", "error") and "log_level" not in ls.cli_overrides:
            from plan_lsp.logs import set_log_level

            set_log_level(level)

    @ls.feature(types.INITIALIZED)
    def on_initialized(ls: PlanLanguageServer, params: types.InitializedParams) -> None:
        contexts = ls.workspaces.all()  # sessions restore now: warnings reach the user now
        for ctx in contexts:
            ctx.runs.push_state()
        # Watching plan files on disk can wait a moment: its imports would otherwise delay
        # the client's first requests (tests/bench/bench_startup.py).
        asyncio.get_running_loop().call_later(WATCH_DELAY_S, ls.watchers.start, contexts)
        startup.settle()

    @ls.feature(types.SHUTDOWN)
    async def on_shutdown(ls: PlanLanguageServer, params: Any) -> None:
        await ls.watchers.stop()
        await ls.workspaces.close()

    @ls.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: PlanLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.documents.did_open(params)
        ls.plan_views.publish(params.text_document.uri)

    @ls.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: PlanLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        doc = ls.documents.did_change(params)
        found = ls.plan_views.plan_context(params.text_document.uri)
        if doc is None or found is None:
            return
        ctx, path = found
        approved = ctx.session.approved
        if approved is not None and Path(approved.path).resolve() == path:
            ctx.approved_text_changed(doc.text)
        ls.plan_views.publish_soon(params.text_document.uri)

    @ls.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: PlanLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.documents.did_save(params)

    @ls.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: PlanLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.documents.did_close(params)

    @ls.feature(types.TEXT_DOCUMENT_CODE_LENS)
    def code_lens(ls: PlanLanguageServer, params: types.CodeLensParams) -> list[types.CodeLens]:
        return ls.plan_views.code_lenses(params)

    @ls.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: PlanLanguageServer, params: types.HoverParams) -> types.Hover | None:
        return step_commands.hover(ls.plan_views, params)

    @ls.feature(types.TEXT_DOCUMENT_CODE_ACTION, CODE_ACTION_OPTIONS)
    def code_action(
        ls: PlanLanguageServer, params: types.CodeActionParams
    ) -> list[types.CodeAction]:
        return ls.plan_views.code_actions(params)
