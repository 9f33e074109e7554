#!/usr/bin/env bash
# Installs what the VS Code end-to-end test needs, idempotently:
#   - Debian packages: chromium (driven by playwright-core), ripgrep and the build tools
#     code-server's native modules compile with;
#   - code-server 4.100.3 (the last line on Node 20) into client-vscode/.e2e/;
#   - the extension's npm dependencies (playwright-core is a devDependency);
#   - python3's venv module (the first-run bootstrap the test goes through);
#   - the server's dependencies as wheels for this platform and every CPython the vsix
#     supports, and pip's wheel, in .e2e/wheelhouse (scripts/stage-server.mjs --fetch-wheels,
#     as `npm run package` fetches them): the vsix the test builds carries them
#     (PLAN_LSP_BUNDLE_WHEELS) and the extension installs from them alone, so the build and
#     the test reach no package index for them.
# Safe to run again: each step is skipped when its result is already there.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
E2E_DIR="$HERE/.e2e"
CODE_SERVER_VERSION="4.100.3"
RG_CACHE="/tmp/vscode-ripgrep-cache-1.15.11"
RG_TARBALL="$RG_CACHE/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz"

apt_packages=(chromium ripgrep build-essential pkg-config libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev)
# The e2e is a first run: the extension builds its server's venv with python3 -m venv.
if ! python3 -m venv --help >/dev/null 2>&1; then apt_packages+=(python3-venv); fi
missing=()
for p in "${apt_packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-e2e: apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q "${missing[@]}"
fi

code_server_bin="$E2E_DIR/node_modules/.bin/code-server"
installed_version=""
if [[ -f "$E2E_DIR/node_modules/code-server/package.json" ]]; then
  installed_version="$(node -p "require('$E2E_DIR/node_modules/code-server/package.json').version")"
fi
if [[ "$installed_version" != "$CODE_SERVER_VERSION" || ! -x "$code_server_bin" ]]; then
  # code-server's postinstall downloads ripgrep; seed its cache with Debian's rg so it
  # installs offline.
  if [[ ! -f "$RG_TARBALL" ]]; then
    mkdir -p /tmp/rgseed "$RG_CACHE"
    cp "$(command -v rg)" /tmp/rgseed/rg
    tar czf "$RG_TARBALL" -C /tmp/rgseed rg
  fi
  mkdir -p "$E2E_DIR"
  [[ -f "$E2E_DIR/package.json" ]] || echo '{"name":"plan-lsp-e2e-tools","private":true}' >"$E2E_DIR/package.json"
  # npm >= 11.19 runs dependency install scripts only when allowed (package.json
  # `allowScripts` or an npmrc `allow-scripts`; older npm ignores both). code-server's
  # postinstall runs a nested `npm install` in lib/vscode whose native modules need theirs,
  # so: fetch without scripts, allow the nested ones in lib/vscode/.npmrc, then rebuild.
  cat >"$E2E_DIR/package.json" <<'JSON'
{"name": "plan-lsp-e2e-tools", "private": true,
 "allowScripts": {"code-server": true, "argon2": true}}
JSON
  echo "install-e2e: npm install code-server@$CODE_SERVER_VERSION into $E2E_DIR"
  (cd "$E2E_DIR" && npm install --ignore-scripts --no-audit --no-fund "code-server@$CODE_SERVER_VERSION")
  echo "allow-scripts=@parcel/watcher,@vscode/deviceid,@vscode/ripgrep,@vscode/spdlog,kerberos,native-watchdog,node-pty" \
    >>"$E2E_DIR/node_modules/code-server/lib/vscode/.npmrc"
  # unsafe_perm: the postinstall refuses root otherwise; yes: node-pty's build runs npx node-gyp.
  (cd "$E2E_DIR" && npm_config_unsafe_perm=true npm_config_yes=true npm_config_nodedir=/usr \
    npm rebuild --foreground-scripts code-server argon2)
fi

if [[ ! -d "$HERE/node_modules/playwright-core" || ! -d "$HERE/node_modules/vscode-languageclient" \
  || ! -d "$HERE/node_modules/json-schema-to-typescript" ]]; then
  echo "install-e2e: npm ci in $HERE"
  (cd "$HERE" && npm ci --no-audit --no-fund)
fi

wheelhouse="$E2E_DIR/wheelhouse"
stamp="$(cat "$HERE/../pyproject.toml" "$HERE/scripts/stage-server.mjs" <(python3 -VV) <(echo "${PLAN_LSP_BUNDLE_PYTHONS:-}") | sha256sum | cut -c1-16)"
if [[ ! -f "$wheelhouse/.stamp" || "$(cat "$wheelhouse/.stamp")" != "$stamp" ]]; then
  echo "install-e2e: the server's dependencies as wheels into $wheelhouse"
  rm -rf "$wheelhouse"
  node "$HERE/scripts/stage-server.mjs" --fetch-wheels "$wheelhouse"
  echo "$stamp" >"$wheelhouse/.stamp"
fi

echo "install-e2e: ready (code-server $("$code_server_bin" --version 2>/dev/null | grep -m1 -E '^[0-9]' ), $(chromium --version 2>/dev/null || echo 'chromium missing'))"
