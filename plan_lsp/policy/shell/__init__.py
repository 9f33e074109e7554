"""Read-only shell: a capability classifier on the real bash grammar (DESIGN.md §4).

Importing this package does not load tree-sitter; the first classification does.
"""

from __future__ import annotations

from plan_lsp.policy.shell.classifier import classify_command
from plan_lsp.policy.shell.model import (
    CAPABILITIES,
    PLAN_ALLOWED_CAPABILITIES,
    Classification,
)

__all__ = ["CAPABILITIES", "PLAN_ALLOWED_CAPABILITIES", "Classification", "classify_command"]
