#!/usr/bin/env bash
# Runs every check: lint, types, and the whole test suite (unit, property, end-to-end).
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check plan_lsp tests
.venv/bin/mypy
.venv/bin/python -m pytest -q "$@"
