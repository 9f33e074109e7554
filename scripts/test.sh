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
  exec .venv/bin/python -m pytest -q -n 2 -m "not slow" "$@"
fi
if [ -d client-vscode/node_modules ]; then
  (cd client-vscode && npm test --silent)
fi
# Everything but the real editors on two workers (the servers and sandboxes mostly wait),
# then the editors one at a time.
status=0
run() {
  local code=0
  .venv/bin/python -m pytest -q "$@" || code=$?
  # 5: nothing selected (e.g. a file given on the command line holds no editor test)
  if [ "$code" != 0 ] && [ "$code" != 5 ]; then status=$code; fi
}
run -n 2 -m "not editors" "$@"
run -m editors "$@"
exit $status
