#!/usr/bin/env bash
# Runs every check: lint, types, the VS Code extension's unit tests, and the whole Python
# test suite (unit, property, end-to-end through real editors, reliability, benchmarks' smoke
# run). `--fast`: lint, types and the tests not marked slow (unit, gate, classifier, policy:
# no editors, no server sessions), about a minute.
# Under CI=true a test whose tool is missing fails instead of skipping (tests/needs.py).
set -euo pipefail
cd "$(dirname "$0")/.."
fast=0
if [ "${1:-}" = "--fast" ]; then
  fast=1
  shift
fi
.venv/bin/ruff check plan_lsp tests
.venv/bin/mypy
if [ "$fast" = 1 ]; then
  exec .venv/bin/python -m pytest -q -m "not slow" "$@"
fi
if [ -d client-vscode/node_modules ]; then
  (cd client-vscode && npm test --silent)
fi
.venv/bin/python -m pytest -q "$@"
