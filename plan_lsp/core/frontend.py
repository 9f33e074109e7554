"""What a front-end gives the session core, and the few values they share.

The core (this package) owns the workflow: prompts, approval, rejection, mode and permission
switches, runs and their history. A front-end (the LSP server in `server/`, the ACP agent in
`acp/`) translates its protocol to the core and implements `FrontEnd`, the one port through
which the core reaches the user: updates, questions, the editor's buffers and the files it
writes. Every update it emits is a value of the wire contract's `Update` union
(`plan_lsp/protocol/updates.py`); each front-end maps it to its own wire in one place.
Nothing here knows a front-end's protocol.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from plan_lsp.agent.plan_tools import PlanDraftPort
    from plan_lsp.policy.ports import EditorPort
    from plan_lsp.protocol.updates import Update
    from plan_lsp.providers.base import Provider
    from plan_lsp.tools.base import UserPort

Notify = Callable[[Mapping[str, object]], None]
"""How the agent and its ports (below the core) tell of an update: its JSON without `runId`
(default: the run under way) and `workspaceUri`; the core checks it against the contract
(`RunManager.notify`) and hands the front-end the typed value."""


class Refused(Exception):
    """A valid request the core refuses, with the reason the user reads."""


class HeldByEditor(OSError):
    """The file is open in an editor that saves its buffers only when the user does: the
    server does not write it behind that buffer (the user's save writes it)."""


@dataclass(frozen=True)
class BufferEdit:
    """How making an open buffer hold a text went."""

    applied: bool
    # The disk holds the same text as the buffer afterwards.
    on_disk: bool = False
    reason: str = ""


@dataclass
class AgentPortsFor:
    """The ports a front-end hands the agent for one workspace."""

    editor: EditorPort
    user: UserPort
    drafts: PlanDraftPort


class FrontEnd(Protocol):
    """The one port from the core to a front-end (one per connection)."""

    def update(self, update: Update) -> None:
        """One of the contract's updates: the front-end renders it or maps it to its wire."""

    def run_began(self, run_id: str, kind: str) -> None:
        """A run started (LSP: `$/progress` begins)."""

    def run_ended(self, run_id: str, stop_reason: str) -> None:
        """A run ended (after its `done` update)."""

    def show(self, message: str, *, warning: bool = False) -> None:
        """A message for the user that needs no answer."""

    def ask(
        self, message: str, options: list[str], *, warning: bool = False
    ) -> Awaitable[str | None]:
        """A question with fixed answers; None when dismissed or unanswered in time."""

    def buffer_text(self, path: Path) -> str | None:
        """The text of the editor's open buffer of `path`, None when it has none."""

    def save_buffer(self, path: Path) -> Awaitable[bool]:
        """Save the open buffer of `path`; False when there is none or it was not saved."""

    def edit_and_save(self, path: Path, text: str, label: str) -> Awaitable[BufferEdit]:
        """Make the open buffer of `path` hold `text`, then save it."""

    def write_file(self, path: Path, text: str) -> None:
        """Write a file the server itself writes (plans, checklists) through the one safe
        writer; raises OSError (HeldByEditor when an editor holds it)."""

    def plans_changed(self) -> None:
        """Session state changed: whatever the front-end shows about plans follows
        (lenses, diagnostics)."""

    def agent_ports(self, notify: Notify) -> AgentPortsFor:
        """The editor, user and plan-draft ports the agent uses in this front-end."""


@dataclass
class ProcessShared:
    """What one process shares between its workspaces: the scripted provider (its script is
    one sequence of turns for the whole process)."""

    scripted: Provider | None = None


WriteFile = Callable[[Path, str], None]
