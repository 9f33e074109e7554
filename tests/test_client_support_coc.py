"""coc.nvim is recognised by its clientInfo name: the server writes no file it holds open
(Vim asks about files written behind its buffers) unless it declared `saveDocuments`, and
its code actions carry no kind (coc's default menus leave `source` actions out)."""

from __future__ import annotations

from lsprotocol import types

from plan_lsp.server.client import ClientSupport

CAPS = types.ClientCapabilities(
    workspace=types.WorkspaceClientCapabilities(
        apply_edit=True,
        workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True),
    ),
    window=types.WindowClientCapabilities(
        show_document=types.ShowDocumentClientCapabilities(support=True)
    ),
)


def test_coc_saves_only_when_the_user_does_and_gets_unkinded_actions() -> None:
    coc = ClientSupport.from_capabilities(CAPS, "coc.nvim")
    assert coc.user_saves is True
    assert coc.code_action_kind is None
    assert coc.show_document and coc.document_changes


def test_coc_that_saves_documents_itself_is_written_for_as_before() -> None:
    caps = types.ClientCapabilities(
        workspace=CAPS.workspace,
        window=CAPS.window,
        experimental={"planLsp": {"saveDocuments": True}},
    )
    coc = ClientSupport.from_capabilities(caps, "coc.nvim")
    assert coc.user_saves is False and coc.save_documents is True


def test_other_clients_keep_source_actions_and_server_writes() -> None:
    for name in ("Neovim", "emacs", "Visual Studio Code", ""):
        support = ClientSupport.from_capabilities(CAPS, name)
        assert support.user_saves is False
        assert support.code_action_kind == types.CodeActionKind.Source
