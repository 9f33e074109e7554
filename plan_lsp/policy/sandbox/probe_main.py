"""`python -m plan_lsp.policy.sandbox.probe_main`: run the sandbox self-test and print the
status as one JSON line (read by `status.py`)."""

from __future__ import annotations

import json
import sys

from plan_lsp.policy.sandbox.probe import probe_configured


def main() -> int:
    status = probe_configured()
    answer = {
        "mechanism": status.mechanism,
        "detail": status.detail,
        "build_profile": status.build_profile,
        "probe_ms": status.probe_ms,
    }
    sys.stdout.write(json.dumps(answer) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
