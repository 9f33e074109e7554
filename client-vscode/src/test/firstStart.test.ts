import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { devNull, tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  BundledWheels,
  abiPins,
  ServerBundle,
  bundleCovers,
  cannotStartMessage,
  installPlan,
  isNetworkFailure,
  noBundleMessage,
  offlineFix,
  otherPythonFix,
  parseBundle,
  pipFailureMessage,
  shellQuote,
  venvFailureMessage,
  versionRange,
} from '../serverInstall';
import { InterpreterProbe, probeInterpreter } from '../serverLaunch';

const wheels: BundledWheels = {
  dir: '/ext/server/wheels',
  pythons: ['3.11', '3.12', '3.13', '3.14'],
  platform: 'linux-x86_64',
  glibc: '2.28',
  pip: '/ext/server/wheels/pip-26.3-py3-none-any.whl',
};
const bundle: ServerBundle = { wheel: '/ext/server/plan_lsp-0.1.0-py3-none-any.whl', id: 'abc', wheels };
const linux: InterpreterProbe = {
  ok: true, version: [3, 12], hasPlanLsp: false, platform: 'linux-x86_64', implementation: 'cpython', libc: 'glibc 2.36',
};

test('the bundled wheels cover an interpreter only on their platform, versions and C library', () => {
  const rows: [Partial<InterpreterProbe>, boolean, RegExp][] = [
    [{}, true, /cover Python 3\.12 on linux-x86_64/],
    [{ version: [3, 11] }, true, /3\.11/],
    [{ version: [3, 14] }, true, /3\.14/],
    [{ version: [3, 15] }, false, /for Python 3\.11–3\.14; this one is 3\.15/],
    [{ platform: 'darwin-arm64', libc: null }, false, /for linux-x86_64; this Python runs on darwin-arm64/],
    [{ platform: 'linux-aarch64' }, false, /linux-aarch64/],
    [{ libc: 'glibc 2.27' }, false, /need glibc ≥ 2\.28; this system has glibc 2\.27/],
    [{ libc: 'glibc 2.28' }, true, /cover/],
    [{ libc: null }, false, /another C library/],
    [{ implementation: 'pypy' }, false, /CPython; this Python is pypy/],
  ];
  for (const [change, covered, reason] of rows) {
    const verdict = bundleCovers(wheels, { ...linux, ...change });
    assert.equal(verdict.covered, covered, JSON.stringify(change));
    assert.match(verdict.reason, reason);
  }
  assert.equal(bundleCovers(undefined, linux).covered, false);
  assert.equal(bundleCovers({ ...wheels, platform: null }, linux).covered, false);
  assert.equal(versionRange(['3.11', '3.13']), '3.11, 3.13');
  assert.equal(versionRange(['3.12']), '3.12');
});

test('bundle.json: the wheels record, an older file without it, a wheel that is missing', () => {
  const files = new Set(['/s/plan_lsp-1.whl', '/s/wheels', '/s/wheels/pip-26.whl']);
  const exists = (f: string): boolean => files.has(f);
  const full = JSON.stringify({ wheel: 'plan_lsp-1.whl', sha256: 'x', wheels: { dir: 'wheels', pythons: ['3.11'], platform: 'linux-x86_64', glibc: '2.28', pip: 'pip-26.whl' } });
  assert.deepEqual(parseBundle(full, '/s', exists), {
    wheel: '/s/plan_lsp-1.whl', id: 'x',
    wheels: { dir: '/s/wheels', pythons: ['3.11'], platform: 'linux-x86_64', glibc: '2.28', pip: '/s/wheels/pip-26.whl' },
  });
  const old = parseBundle(JSON.stringify({ wheel: 'plan_lsp-1.whl', sha256: 'x' }), '/s', exists);
  assert.deepEqual(old?.wheels, { dir: '/s/wheels', pythons: [], platform: null, glibc: null, pip: null });
  assert.equal(bundleCovers(old?.wheels, linux).covered, false);
  assert.equal(parseBundle(JSON.stringify({ wheel: 'plan_lsp-2.whl', sha256: 'x' }), '/s', exists), undefined);
  assert.equal(parseBundle('{not json', '/s', exists), undefined);
  assert.deepEqual(parseBundle(JSON.stringify({ wheel: 'plan_lsp-1.whl', sha256: 'x' }), '/s', (f) => f === '/s/plan_lsp-1.whl')?.wheels, undefined);
});

test('install plan: covered → no index, pip from its wheel in a venv without pip (or uv); else the index with the wheels as a source', () => {
  const bundled = installPlan(bundle, linux, '/g/venv', { windows: false });
  assert.equal(bundled.source, 'bundled');
  assert.deepEqual(bundled.venv, ['-I', '-m', 'venv', '--clear', '--without-pip', '/g/venv']);
  assert.deepEqual(bundled.install, {
    command: '/g/venv/bin/python',
    args: ['-I', `${wheels.pip}/pip`, 'install', '--no-input', '--no-compile', '--no-index', '--find-links', wheels.dir, bundle.wheel],
    tool: 'pip',
  });
  const uv = installPlan(bundle, linux, '/g/venv', { windows: false, uv: '/usr/bin/uv' });
  assert.deepEqual(uv.install, {
    command: '/usr/bin/uv',
    args: ['pip', 'install', '--no-config', '--offline', '--python', '/g/venv/bin/python', '--no-index', '--find-links', wheels.dir, bundle.wheel],
    tool: 'uv',
  });
  const index = installPlan(bundle, { ...linux, version: [3, 15] }, '/g/venv', { windows: false, uv: '/usr/bin/uv' });
  assert.equal(index.source, 'index');
  assert.equal(index.install.tool, 'pip');
  assert.ok(!index.install.args.includes('--no-index'));
  assert.deepEqual(index.install.args.slice(-3), ['--find-links', wheels.dir, bundle.wheel]);
  assert.match(index.reason, /3\.15/);
  const noPip = installPlan({ ...bundle, wheels: { ...wheels, pip: null } }, linux, '/g/venv', { windows: false });
  assert.ok(!noPip.venv.includes('--without-pip'));
  assert.deepEqual(noPip.install.args.slice(0, 4), ['-I', '-m', 'pip', 'install']);
  const windows = installPlan(bundle, { ...linux, platform: 'win32-amd64', libc: null }, 'C:\\g\\venv', { windows: true });
  assert.match(windows.install.command, /Scripts.python\.exe$/);
});

test('index path: only the version- and platform-specific wheels are downloaded, at the bundled versions; the rest comes from the bundle', () => {
  const names = [
    'pydantic_core-2.50.5-cp312-cp312-manylinux2014_x86_64.manylinux_2_17_x86_64.whl',
    'pydantic_core-2.50.5-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.whl',
    'watchfiles-1.3.0-cp310-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl',
    'pydantic-2.14.4-py3-none-any.whl',
    'pip-26.3-py3-none-any.whl',
    'bundle.json',
  ];
  assert.deepEqual(abiPins(names), ['pydantic_core==2.50.5', 'watchfiles==1.3.0']);
  const probe = { ...linux, version: [3, 15] as [number, number] };
  const plan = installPlan(bundle, probe, '/g/venv', { windows: false, prefetch: { dir: '/g/dl', pins: abiPins(names) } });
  const pip = ['-I', `${wheels.pip}/pip`];
  assert.equal(plan.source, 'index');
  assert.deepEqual(plan.prefetch, {
    command: '/g/venv/bin/python',
    args: [...pip, 'download', '--no-input', '--only-binary=:all:', '--no-deps', '-d', '/g/dl', 'pydantic_core==2.50.5', 'watchfiles==1.3.0'],
  });
  assert.deepEqual(plan.install.args, [...pip, 'install', '--no-input', '--no-compile', '--no-index', '--find-links', wheels.dir, '--find-links', '/g/dl', bundle.wheel]);
  assert.deepEqual(plan.fallback?.args, [...pip, 'install', '--no-input', '--no-compile', '--find-links', wheels.dir, bundle.wheel]);
  // Covered: no download at all, whatever is offered.
  assert.equal(installPlan(bundle, linux, '/g/venv', { windows: false, prefetch: { dir: '/g/dl', pins: ['x==1'] } }).prefetch, undefined);
});

test('failure cards: a fix that works offline with this extension\'s paths, never `pip install plan-lsp`', () => {
  const fix = offlineFix(bundle, 'python3', linux, '/home/u/.plan-lsp/venv', false);
  assert.deepEqual(fix, {
    command:
      `python3 -m venv --without-pip /home/u/.plan-lsp/venv && /home/u/.plan-lsp/venv/bin/python ${wheels.pip}/pip install --no-index --find-links ${wheels.dir} ${bundle.wheel}`,
    python: '/home/u/.plan-lsp/venv/bin/python',
  });
  assert.equal(offlineFix(bundle, 'python3', { ...linux, version: [3, 15] }, '/v', false), null);
  assert.equal(offlineFix(undefined, 'python3', linux, '/v', false), null);
  const bundledPlan = installPlan(bundle, linux, '/g/venv', { windows: false });
  const indexPlan = installPlan(bundle, { ...linux, version: [3, 15] }, '/g/venv', { windows: false });
  const network = 'ERROR: Could not find a version that satisfies the requirement pygls (from versions: none)';
  const other = otherPythonFix(bundle, '/home/u/.plan-lsp/venv', false);
  assert.deepEqual(other, {
    command: `python3.14 -m venv --without-pip /home/u/.plan-lsp/venv && ${fix?.command.split(' && ')[1]}`,
    python: '/home/u/.plan-lsp/venv/bin/python',
    versions: '3.11–3.14',
    platform: 'linux-x86_64',
    base: 'python3.14',
  });
  assert.match(otherPythonFix(bundle, 'C:\\v', true)?.command ?? '', /^py -3\.14 -m venv /);
  assert.equal(otherPythonFix({ ...bundle, wheels: undefined }, '/v', false), null);
  const texts = [
    cannotStartMessage({ python: '/usr/bin/python3', source: 'setting' }, linux, fix, other),
    cannotStartMessage({ python: 'python3', source: 'default' }, { ...linux, version: [3, 9] }, null, other),
    cannotStartMessage({ python: '/nope', source: 'setting' }, { ok: false, version: null, hasPlanLsp: false, error: 'ENOENT' }, null, other),
    cannotStartMessage({ python: 'python3.15', source: 'setting' }, { ...linux, version: [3, 15] }, null, other),
    pipFailureMessage('error: something broke', bundledPlan, fix, other),
    pipFailureMessage(network, indexPlan, null, other),
    venvFailureMessage('python3', fix),
    noBundleMessage('python3', '/src/plan-lsp', false),
    noBundleMessage('python3', null, false),
  ];
  for (const text of texts) {
    assert.doesNotMatch(text, /pip install plan-lsp/, text);
    assert.match(text, /planLsp\.python|npm run package/, text);
  }
  assert.ok(texts[0].includes(`\`${fix?.command}\``), texts[0]);
  assert.match(texts[0], /works offline.*to "\/home\/u\/\.plan-lsp\/venv\/bin\/python"/);
  assert.match(texts[1], /CPython 3\.11–3\.14 on linux-x86_64 \(python3\.14 below; use yours\): run `python3\.14 -m venv/);
  for (const i of [1, 2, 3, 5]) assert.ok(texts[i].includes(`\`${other?.command}\``), texts[i]);
  assert.match(texts[3], /cannot import plan_lsp\. Offline, the wheels .* CPython 3\.11–3\.14/);
  assert.ok(texts[4].includes(fix?.command ?? '-'), texts[4]);
  assert.match(texts[5], /this one is 3\.15, so pip needed a package index and could not reach one.*PIP_INDEX_URL.*Offline, .*3\.11–3\.14/);
  assert.equal(isNetworkFailure(network), true);
  assert.equal(isNetworkFailure('error: command gcc failed'), false);
  assert.match(texts[7], /pip install \/src\/plan-lsp/);
});

test('paths with spaces are quoted for the shell they are pasted into', () => {
  assert.equal(shellQuote('/a/b-c_1.whl', false), '/a/b-c_1.whl');
  assert.equal(shellQuote('/Users/u/Library/Application Support/x', false), "'/Users/u/Library/Application Support/x'");
  assert.equal(shellQuote("/it's", false), "'/it'\\''s'");
  assert.equal(shellQuote('C:\\Program Files\\x', true), '"C:\\Program Files\\x"');
  const spaced: ServerBundle = { ...bundle, wheel: '/Application Support/plan_lsp.whl' };
  assert.match(offlineFix(spaced, 'python3', linux, '/v', false)?.command ?? '', / '\/Application Support\/plan_lsp\.whl'$/);
});

/** POSIX words of one command (single and double quotes, no expansions): what a shell does
 * with the commands offlineFix writes. */
function words(command: string): string[] {
  const out: string[] = [];
  let word: string | null = null;
  for (let i = 0; i < command.length; i++) {
    const c = command[i];
    if (c === "'") {
      const end = command.indexOf("'", i + 1);
      word = (word ?? '') + command.slice(i + 1, end);
      i = end;
    } else if (c === '"') {
      const end = command.indexOf('"', i + 1);
      word = (word ?? '') + command.slice(i + 1, end);
      i = end;
    } else if (c === ' ') {
      if (word !== null) out.push(word);
      word = null;
    } else word = (word ?? '') + c;
  }
  if (word !== null) out.push(word);
  return out;
}

// The vsix's server/ folder as `npm run package` stages it (scripts/stage-server.mjs).
const SERVER = join(__dirname, '..', '..', 'server');

function stagedBundle(t: { skip(message: string): void }): ServerBundle | undefined {
  const meta = join(SERVER, 'bundle.json');
  if (!existsSync(meta)) {
    const why = `no staged server in ${SERVER}: run \`npm run package\` (or node scripts/stage-server.mjs)`;
    if (process.env.CI === 'true') assert.fail(why);
    t.skip(why);
    return undefined;
  }
  const staged = parseBundle(readFileSync(meta, 'utf8'), SERVER, existsSync);
  assert.ok(staged?.wheels, `${meta} names no dependency wheels`);
  return staged;
}

/** No package index and no network: pip's configuration and PIP_* variables are left out and
 * any proxy points at a closed port. */
function offlineEnv(): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(PIP_|UV_)|_proxy$|_PROXY$/.test(k)));
  const closed = 'http://127.0.0.1:9';
  return { ...env, PIP_CONFIG_FILE: devNull, http_proxy: closed, https_proxy: closed, HTTP_PROXY: closed, HTTPS_PROXY: closed };
}

function importsPlanLsp(python: string): string {
  return execFileSync(python, ['-I', '-c', 'import plan_lsp.cli, pydantic_core, jiter; print(plan_lsp.__file__)'], { encoding: 'utf8' });
}

test('the failure card\'s offline fix, run as written, installs an importable plan_lsp from the bundled wheels (process)', async (t) => {
  const staged = stagedBundle(t);
  if (!staged) return;
  const probe = await probeInterpreter('python3', tmpdir());
  assert.ok(bundleCovers(staged.wheels, probe).covered, `the staged wheels do not cover python3: ${bundleCovers(staged.wheels, probe).reason}`);
  const dir = mkdtempSync(join(tmpdir(), 'plan-lsp-fix-'));
  try {
    const venv = join(dir, 'server venv');
    const fix = offlineFix(staged, 'python3', probe, venv, false);
    assert.ok(fix);
    const text = cannotStartMessage({ python: 'python3', source: 'setting' }, probe, fix, null);
    const command = /`([^`]+)`/.exec(text)?.[1];
    assert.ok(command, text);
    for (const part of command.split(' && ')) {
      const [program, ...args] = words(part);
      execFileSync(program, args, { cwd: dir, env: offlineEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    }
    const python = /set "planLsp\.python" in your user settings to "([^"]+)"/.exec(text)?.[1];
    assert.equal(python, fix.python);
    assert.ok(importsPlanLsp(python).startsWith(venv));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the first start\'s own install steps work with no package index (process)', async (t) => {
  const staged = stagedBundle(t);
  if (!staged) return;
  const probe = await probeInterpreter('python3', tmpdir());
  const dir = mkdtempSync(join(tmpdir(), 'plan-lsp-boot-'));
  try {
    const venv = join(dir, 'venv');
    const plan = installPlan(staged, probe, venv, { windows: false, uv: null });
    assert.equal(plan.source, 'bundled', plan.reason);
    execFileSync('python3', plan.venv, { cwd: dir, env: offlineEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    execFileSync(plan.install.command, plan.install.args, { cwd: dir, env: offlineEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    assert.ok(importsPlanLsp(join(venv, 'bin', 'python')).startsWith(venv));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('index path, run: the download brings only the wheels the bundle lacks for this Python, the install takes the rest from the bundle (process)', async (t) => {
  const staged = stagedBundle(t);
  if (!staged?.wheels) return;
  const probe = await probeInterpreter('python3', tmpdir());
  const tag = `cp${probe.version?.join('')}`;
  const dir = mkdtempSync(join(tmpdir(), 'plan-lsp-index-'));
  try {
    // A bundle without this Python's own wheels, and a folder that stands in for the package
    // index (PIP_FIND_LINKS with PIP_NO_INDEX: nothing leaves the machine) holding them.
    const bundleDir = join(dir, 'wheels');
    const index = join(dir, 'index');
    mkdirSync(bundleDir);
    mkdirSync(index);
    for (const name of readdirSync(staged.wheels.dir)) {
      const own = name.includes(`-${tag}-${tag}-`);
      if (!own) symlinkSync(join(staged.wheels.dir, name), join(bundleDir, name));
      if (!name.endsWith('-none-any.whl') && (own || name.includes('-abi3-'))) symlinkSync(join(staged.wheels.dir, name), join(index, name));
    }
    const partial: ServerBundle = { ...staged, wheels: { ...staged.wheels, dir: bundleDir, pythons: ['3.99'], pip: join(bundleDir, staged.wheels.pip ? staged.wheels.pip.split('/').pop() ?? '' : '') } };
    assert.ok(staged.wheels.pip, 'the staged bundle carries no pip wheel');
    const venv = join(dir, 'venv');
    const downloaded = join(dir, 'downloaded');
    const plan = installPlan(partial, probe, venv, { windows: false, prefetch: { dir: downloaded, pins: abiPins(readdirSync(bundleDir)) } });
    assert.equal(plan.source, 'index');
    assert.ok(plan.prefetch);
    const env = { ...offlineEnv(), PIP_NO_INDEX: '1', PIP_FIND_LINKS: index };
    execFileSync('python3', plan.venv, { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    execFileSync(plan.prefetch.command, plan.prefetch.args, { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    // Every wheel specific to a version or platform, and nothing else (no pure-Python wheel).
    assert.deepEqual(readdirSync(downloaded).sort(), readdirSync(index).sort());
    assert.ok(readdirSync(downloaded).some((name) => name.includes(`-${tag}-${tag}-`)));
    execFileSync(plan.install.command, plan.install.args, { cwd: dir, env: offlineEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    assert.ok(importsPlanLsp(join(venv, 'bin', 'python')).startsWith(venv));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
