"""The session core: one per workspace, driven by any front-end (the LSP server, the ACP
agent) through `workflow`, reaching the user only through the front-end's `FrontEnd`."""

from plan_lsp.core.frontend import (
    AgentPortsFor,
    BufferEdit,
    FrontEnd,
    HeldByEditor,
    ProcessShared,
    Refused,
)
from plan_lsp.core.runs import RunBusy
from plan_lsp.core.workspace import WorkspaceCore
from plan_lsp.core.workspaces import Workspaces

__all__ = [
    "AgentPortsFor",
    "BufferEdit",
    "FrontEnd",
    "HeldByEditor",
    "ProcessShared",
    "Refused",
    "RunBusy",
    "WorkspaceCore",
    "Workspaces",
]
