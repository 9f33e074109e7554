#!/usr/bin/env bash
# Runs every check: lint, types, the VS Code extension's unit tests, and the whole Python
# test suite (unit, property, end-to-end through real editors).
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check plan_lsp tests
.venv/bin/mypy
if [ -d client-vscode/node_modules ]; then
  (cd client-vscode && npm test --silent)
fi
.venv/bin/python -m pytest -q "$@"
