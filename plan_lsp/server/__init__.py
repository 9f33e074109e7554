"""LSP wiring: custom planLsp/* methods, commands, code lenses, streaming edits."""

from __future__ import annotations

from typing import Any

from plan_lsp.server.app import PlanLanguageServer


def create_server(cli_overrides: dict[str, Any] | None = None) -> PlanLanguageServer:
    from plan_lsp.server import handlers

    ls = PlanLanguageServer(cli_overrides)
    handlers.register(ls)
    return ls


__all__ = ["PlanLanguageServer", "create_server"]
