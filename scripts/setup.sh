#!/usr/bin/env bash
# Sets up what plan-lsp needs to run, idempotently; then `.venv/bin/plan-lsp demo` works:
#   - Debian packages (when run as root with apt-get): bubblewrap (the plan-mode sandbox),
#     ripgrep (the search tool), git;
#   - the Python venv .venv with the package (editable).
# The development tools (ruff, mypy, pytest, ...) are installed by `bash scripts/test.sh` on
# its first run; what the full test tier runs besides (editors, a model server, the attack
# suites' programs) by scripts/test-tools.sh, which the full tier runs on first use.
set -euo pipefail
cd "$(dirname "$0")/.."

# step WHAT USUAL CMD...: says what it does and how long it usually takes on a fresh 2-core
# machine (when it is already done: a moment), then how long it took.
step() {
  local what=$1 usual=$2 start=$SECONDS
  shift 2
  echo "setup: $what (usually $usual)"
  "$@"
  echo "setup: $what: $((SECONDS - start)) s"
}

APT_PACKAGES=(bubblewrap ripgrep git)
apt_packages() {
  local missing=() p
  for p in "${APT_PACKAGES[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then return 0; fi
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "setup: apt-get install ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "setup: not root or no apt-get; install these yourself: ${missing[*]}" >&2
  fi
}

venv() {
  local py=${PYTHON:-python3}
  if [ ! -x .venv/bin/python ]; then
    "$py" -m venv .venv
  fi
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -e .
  # Bytecode, as an installed wheel has it: an editable checkout gets none where
  # PYTHONDONTWRITEBYTECODE is set, and the server would compile every module at every start.
  .venv/bin/python -m compileall -q plan_lsp >/dev/null
}

started=$SECONDS
step "Debian packages: ${APT_PACKAGES[*]}" "15 s when missing" apt_packages
step ".venv: the package" "1 min" venv
echo "setup: done in $((SECONDS - started)) s: .venv/bin/plan-lsp demo runs a session; bash scripts/test.sh runs the tests (its first run installs the test tools)"
