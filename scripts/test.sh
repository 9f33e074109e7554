#!/usr/bin/env bash
# Runs the checks: lint (ruff), types (mypy), then one tier of the Python tests.
#
#   bash scripts/test.sh --unit   ruff, mypy, the unit tier (`-m unit`): tests that start no
#                                 process at all (no server, sandbox, editor, git or bash).
#   bash scripts/test.sh --fast   ruff, mypy, the unit tier plus the execution gate's and the
#                                 shell classifier's tests that need no server and no sandbox
#                                 (`-m fast`, the same as `-m "not slow"`).
#   bash scripts/test.sh          everything (what CI runs, .ci/run): ruff, mypy, then the test
#                                 tools on first use (scripts/test-tools.sh: editors, a model
#                                 server, the attack suites' programs; quick once installed),
#                                 the VS Code extension's unit tests and the whole suite (unit,
#                                 property, end-to-end through real editors, reliability,
#                                 attack suite, the benchmarks' smoke run).
# Every tier installs the Python development tools into .venv on first use; --unit and
# --fast install nothing else. PLAN_LSP_TEST_TOOLS=0 skips the test tools' installer (the
# tests whose tool is missing then skip, or fail under CI=true).
#
# Tiers and markers are given by tests/conftest.py (by place and by what a test imports);
# a test in the unit tier that starts a process fails. Extra arguments go to pytest.
# Hypothesis: `--unit`/`--fast` use the `dev` profile (few examples, no deadline) unless
# CI=true (then the thorough `ci` profile); HYPOTHESIS_PROFILE overrides both.
# Under CI=true a test whose tool is missing fails instead of skipping (tests/needs.py).
set -euo pipefail
cd "$(dirname "$0")/.."
tier=full
case "${1:-}" in
  --unit) tier=unit; shift ;;
  --fast) tier=fast; shift ;;
esac
# The development tools, on first use (scripts/setup.sh installs the package only).
if ! .venv/bin/python -c "import pytest, pytest_lsp, xdist, hypothesis, mypy, ruff, vulture, jinja2, mcp_server_git" 2>/dev/null; then
  echo "test: installing the development tools into .venv (first run only)"
  .venv/bin/python -m pip install -q -e ".[dev]"
fi
.venv/bin/ruff check plan_lsp tests
.venv/bin/mypy
if [ "$tier" != full ]; then
  if [ "${CI:-}" != true ]; then
    export HYPOTHESIS_PROFILE="${HYPOTHESIS_PROFILE:-dev}"
  fi
  # Nothing below these folders is in either tier (by place): not even collected.
  exec .venv/bin/python -m pytest -q -n 2 -m "$tier" --ignore=tests/e2e \
    --ignore=tests/reliability --ignore=tests/bench --ignore=tests/redteam "$@"
fi
if [ "${PLAN_LSP_TEST_TOOLS:-1}" != 0 ]; then
  bash scripts/test-tools.sh
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
