"""After a Do run the next request starts in the `after_do` work mode, with the permission
mode from before the approval: one chosen at approval applies to that Do run only. While
the Do run lasts (in step mode: until no step is left), the state's `nextRequest` says both."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from plan_lsp.core.parts import WorkspaceParts
from plan_lsp.core.runs import RunManager
from plan_lsp.core.stepping import Stepping
from plan_lsp.protocol.state import NextRequest, PermissionMode
from plan_lsp.session import Actor


class AfterDoCore(WorkspaceParts, Protocol):
    """A workspace's core as `AfterDo` uses it (typed here: the core builds `AfterDo`)."""

    @property
    def runs(self) -> RunManager: ...

    @property
    def stepping(self) -> Stepping: ...


class AfterDo:
    """One per workspace. From an approval that starts a Do run until that run is over (in
    step mode: until no step is left), the state's `nextRequest` says which work mode and
    permission mode the next request uses; when it is over, the session switches to them. A
    permission mode the user picks during the run is theirs and stays."""

    def __init__(self, core: AfterDoCore) -> None:
        self.core = core
        self._restore: PermissionMode | None = None
        self._in_do_run = False
        core.session.add_listener(self._changed)

    def approving(self) -> None:
        """Before an approval that starts a Do run (and may choose its permission mode)."""
        if self.core.session.context.nextRequest is None:
            self._restore = self.core.session.permission_mode

    def starting(self) -> None:
        """Right before the Do run starts: from its first state on, it says what follows."""
        self._show()

    def _show(self) -> None:
        permission = self._restore or self.core.session.permission_mode
        after = NextRequest(mode=self.core.config.after_do, permissionMode=permission)
        self.core.session.set_context(nextRequest=after)

    def _changed(self, session: object, kind: str, data: Mapping[str, object]) -> None:
        if kind == "permission_mode_changed" and self._in_do_run:
            self._restore = None
            self._show()
        elif kind == "running" and data.get("running"):
            run = self.core.runs.current
            self._in_do_run = run is not None and run.kind == "do"
            if self._in_do_run:
                self._show()
        elif kind == "running" and self._in_do_run:
            self._in_do_run = False
            if self.core.stepping.progress().nextStep is None:
                self._finish()

    def _finish(self) -> None:
        session = self.core.session
        if self._restore is not None:
            session.set_permission_mode(self._restore, Actor.SYSTEM)
        self._restore = None
        session.set_context(nextRequest=None)
        session.set_mode(self.core.config.after_do, Actor.SYSTEM)
