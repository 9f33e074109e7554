"""What the runs of a workspace use of its core (`WorkspaceCore` has it): typed here so
`runs.py` and `checklist.py` need not import the module that builds them."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from plan_lsp.config import Config
    from plan_lsp.core.frontend import FrontEnd
    from plan_lsp.protocol.state import SessionState
    from plan_lsp.providers.base import Provider
    from plan_lsp.session import Session
    from plan_lsp.tools.mcp.manager import McpManager


class WorkspaceParts(Protocol):
    root: Path
    config: Config
    session: Session
    frontend: FrontEnd
    mcp: McpManager | None

    @property
    def plan_shell(self) -> str: ...

    def provider(self) -> Provider: ...

    def rel(self, path: Path | str) -> str: ...

    def plan_text(self, path: Path) -> str: ...

    def state(self) -> SessionState: ...
