"""`python -m plan_lsp.policy.sandbox.probe_main`: run the sandbox self-test and print the
status as one JSON line (read by `status.py`)."""

from __future__ import annotations

import dataclasses
import json
import sys

from plan_lsp.policy.sandbox.probe import probe_configured


def main() -> int:
    sys.stdout.write(json.dumps(dataclasses.asdict(probe_configured())) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
