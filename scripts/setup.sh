#!/usr/bin/env bash
# Sets up everything plan-lsp and its tests need, idempotently:
# system packages (when run as root with apt), the Python venv, the editor clients' deps.
set -euo pipefail
cd "$(dirname "$0")/.."

# fd-find, libxml2-utils, binutils, bsdextrautils, unzip, xxd: programs the classified shell
# allow-list admits, which the benign-command and attack suites run for real.
# netcat-openbsd, socat, curl: clients of Unix sockets and FIFOs the host-IPC attacks use.
APT_PACKAGES=(bubblewrap ripgrep neovim git fd-find libxml2-utils binutils bsdextrautils unzip xxd
  netcat-openbsd socat curl)

if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing system packages: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
else
  echo "setup: not root or no apt-get; make sure these are installed: ${APT_PACKAGES[*]}"
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e ".[dev]"
# Bytecode, as an installed wheel has it: an editable checkout gets none where
# PYTHONDONTWRITEBYTECODE is set, and the server would compile every module at every start.
.venv/bin/python -m compileall -q plan_lsp >/dev/null

# Editor clients (their own scripts are idempotent and skip what is already there).
if [ -x client-vscode/scripts/install-e2e.sh ] && [ "${PLAN_LSP_SKIP_VSCODE:-0}" != 1 ]; then
  bash client-vscode/scripts/install-e2e.sh
fi
if [ -f client-nvim/scripts/install-e2e.sh ]; then
  bash client-nvim/scripts/install-e2e.sh
fi
bash tests/e2e/emacs/install.sh
bash tests/e2e/llama/install.sh
bash tests/e2e/vim/install.sh
echo "setup: done"
