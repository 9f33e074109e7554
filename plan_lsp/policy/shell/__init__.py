"""Plan-mode shell: a capability classifier on the real bash grammar (docs/security.md §2, §7).

`classify_command(cmd, protection=..., roots=..., cwd=..., network=...)`: `classifier.py`.
Importing this package does not load tree-sitter; the first classification does.
"""

from __future__ import annotations

from plan_lsp.policy.shell.classifier import classify_command
from plan_lsp.policy.shell.model import (
    CAPABILITIES,
    PLAN_ALLOWED_CAPABILITIES,
    PROTECTIONS,
    Classification,
    Protection,
)

__all__ = [
    "CAPABILITIES",
    "PLAN_ALLOWED_CAPABILITIES",
    "PROTECTIONS",
    "Classification",
    "Protection",
    "classify_command",
]
