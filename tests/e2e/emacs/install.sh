#!/usr/bin/env bash
# Installs what the Emacs end-to-end tests run, idempotently: Debian's emacs-nox (28.2)
# with its packaged eglot (1.9) and lsp-mode (8.0).
set -euo pipefail

PACKAGES=(emacs-nox elpa-eglot elpa-lsp-mode)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install(emacs): $(emacs --version | head -1); eglot and lsp-mode present"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" != 0 ]; then
  echo "install(emacs): not root or no apt-get; install ${missing[*]} yourself" >&2
  exit 0
fi
echo "install(emacs): installing ${missing[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install(emacs): $(emacs --version | head -1)"
