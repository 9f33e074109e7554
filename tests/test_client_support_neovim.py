"""Neovim is recognised by its clientInfo name: its workspace/applyEdit handler prints
"Workspace edit <label>" for every edit that carries a label, so it gets edits without one;
every other client keeps the label (VS Code names its undo steps with it)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from lsprotocol import types

from plan_lsp.server.client import ClientChannel, ClientSupport

CAPS = types.ClientCapabilities(
    workspace=types.WorkspaceClientCapabilities(apply_edit=True),
    window=types.WindowClientCapabilities(work_done_progress=True),
)


def test_only_neovim_gets_edits_without_a_label() -> None:
    assert ClientSupport.from_capabilities(CAPS, "Neovim").edit_labels is False
    for name in ("coc.nvim", "emacs", "Visual Studio Code", "Eglot", ""):
        assert ClientSupport.from_capabilities(CAPS, name).edit_labels is True


def _sent_label(client_name: str) -> str | None:
    sent: list[types.ApplyWorkspaceEditParams] = []

    def send_request_async(method: str, params: Any) -> asyncio.Future[Any]:
        assert method == types.WORKSPACE_APPLY_EDIT
        sent.append(params)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        future.set_result({"applied": True})
        return future

    protocol = SimpleNamespace(send_request_async=send_request_async)
    channel = ClientChannel(SimpleNamespace(protocol=protocol))  # type: ignore[arg-type]
    channel.support = ClientSupport.from_capabilities(CAPS, client_name)
    assert asyncio.run(channel.apply_edit(types.WorkspaceEdit(changes={}), "plan-lsp: draft"))
    return sent[0].label


def test_the_label_reaches_every_client_but_neovim() -> None:
    assert _sent_label("Neovim") is None
    assert _sent_label("Visual Studio Code") == "plan-lsp: draft"
