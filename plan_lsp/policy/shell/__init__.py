"""Plan-mode shell: a capability classifier on the real bash grammar (docs/security.md §2, §7).

`classify_command(cmd, protection=..., roots=..., cwd=..., network=...)` with two rule sets:
`classified` (strict allow-list, the only wall without a sandbox) and `sandboxed` (the
sandbox is the wall; refuse only what shows an intent to change things). See
`classifier.py` for the rules.

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
