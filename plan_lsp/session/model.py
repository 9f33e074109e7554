"""The session's value types: the wire contract's (`plan_lsp/protocol/state.py`)."""

from plan_lsp.protocol.state import Outcome as Outcome
from plan_lsp.protocol.state import PermissionMode as PermissionMode
from plan_lsp.protocol.state import PlanStatus as PlanStatus
from plan_lsp.protocol.state import Todo as Todo
from plan_lsp.protocol.state import WorkMode as WorkMode
