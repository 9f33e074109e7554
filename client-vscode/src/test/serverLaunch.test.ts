import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cannotStartMessage } from '../serverInstall';
import {
  chooseInterpreter,
  describeModelSettings,
  initializationOptions,
  interpreterReport,
  isSupportedVersion,
  launchDirectory,
  probeInterpreter,
  serverArguments,
} from '../serverLaunch';
import { describeExit } from '../serverProcess';
import { DEFAULT_SETTINGS } from '../settings';
import { shellProtectionText, statusBarText, statusBarTooltip } from '../statusText';

const settings = { ...DEFAULT_SETTINGS, provider: 'openai', model: ' gpt-x ', planShell: 'off' };

test('initializationOptions carries the contract keys and leaves empty ones out', () => {
  assert.deepEqual(initializationOptions(settings, 'sk-1'), {
    provider: 'openai', model: 'gpt-x', permissionMode: 'ask', planShell: 'off', apiKey: 'sk-1',
  });
  assert.ok(!('apiKey' in initializationOptions(settings, undefined)));
  assert.ok(!('planShell' in initializationOptions({ ...settings, planShell: '' }, undefined)));
  const more = initializationOptions({ ...settings, planNetwork: true, transcript: '/t.jsonl', mcpServers: [{ name: 'git' }] }, undefined);
  assert.equal(more.planNetwork, true);
  assert.equal(more.transcript, '/t.jsonl');
  assert.deepEqual(more.mcp, { servers: [{ name: 'git' }] });
});

test('server argv: isolated python -m plan_lsp serve, the extra settings args, --stdio', () => {
  assert.deepEqual(serverArguments(['--provider', 'scripted', '--script', 's.json']), [
    '-I', '-m', 'plan_lsp', 'serve', '--provider', 'scripted', '--script', 's.json', '--stdio',
  ]);
});

test('the launch directory is never inside a workspace folder', () => {
  assert.equal(launchDirectory('/home/u/.config/Code/User/globalStorage/x', ['/work/repo'], '/tmp'), '/home/u/.config/Code/User/globalStorage/x');
  assert.equal(launchDirectory('/work/repo/.vscode-data/storage', ['/srv/a', '/work/repo'], '/tmp'), '/tmp');
  assert.equal(launchDirectory('/work/repo', ['/work/repo'], '/tmp'), '/tmp');
  assert.equal(launchDirectory('/work/repository2/s', ['/work/repo'], '/tmp'), '/work/repository2/s');
});

test('python -I in that directory cannot import a module the workspace ships', () => {
  // What the server launch relies on: a pygls.py at the workspace root stays unimported even
  // when the process runs with the workspace as its working directory.
  const ws = mkdtempSync(join(tmpdir(), 'plan-lsp-iso-'));
  const marker = join(ws, 'imported');
  writeFileSync(join(ws, 'json.py'), `open(${JSON.stringify(marker)}, 'w').write('x')\n`);
  // `-m`, as the server is started: json.tool imports the json package.
  execFileSync('python3', ['-I', '-m', 'json.tool'], { cwd: ws, input: '{}' });
  assert.equal(existsSync(marker), false, 'python -I imported json.py from the working directory');
  try {
    execFileSync('python3', ['-m', 'json.tool'], { cwd: ws, input: '{}', stdio: ['pipe', 'ignore', 'ignore'] });
  } catch {
    // json.py is not a package: the control run fails after importing it.
  }
  assert.equal(existsSync(marker), true, 'the control run (without -I) should import it');
});

test('interpreter order: setting, Python extension (trusted workspace only), python3', () => {
  assert.deepEqual(chooseInterpreter('/v/bin/python', '/ext/python'), { python: '/v/bin/python', source: 'setting' });
  assert.deepEqual(chooseInterpreter('', '/ext/python'), { python: '/ext/python', source: 'python-extension' });
  assert.deepEqual(chooseInterpreter('', '/ws/.venv/bin/python', false), { python: 'python3', source: 'default' });
  assert.deepEqual(chooseInterpreter(undefined, undefined), { python: 'python3', source: 'default' });
});

test('the log names the interpreter actually used and where it came from', () => {
  const probe = { ok: true, version: [3, 11] as [number, number], hasPlanLsp: true, planLspVersion: '0.1.0' };
  assert.equal(
    interpreterReport({ python: '/g/venv/bin/python', source: 'private-venv' }, probe),
    "Server interpreter: /g/venv/bin/python (the extension's private environment; Python 3.11, plan-lsp 0.1.0)",
  );
  assert.match(interpreterReport({ python: 'python3', source: 'default' }, probe), /python3 on PATH/);
});

test('the model settings line never carries the key', () => {
  const line = describeModelSettings({ ...settings, baseUrl: 'http://localhost:11434/v1' }, true);
  assert.match(line, /provider openai, base URL http:\/\/localhost:11434\/v1, model gpt-x, API key set/);
  assert.match(describeModelSettings(DEFAULT_SETTINGS, false), /provider \(the server's default\).*API key not set/);
});

test('a clean stop is not an error; an unexpected exit is', () => {
  assert.deepEqual(describeExit({ code: 0, signal: null, requested: false }), { level: 'info', text: 'Server stopped (exit code 0).' });
  assert.equal(describeExit({ code: null, signal: 'SIGKILL', requested: true }).level, 'info');
  assert.equal(describeExit({ code: 1, signal: null, requested: false }).level, 'error');
  assert.match(describeExit({ code: 1, signal: null, requested: false }).text, /exit code 1/);
});

test('version floor is 3.11', () => {
  assert.equal(isSupportedVersion([3, 11]), true);
  assert.equal(isSupportedVersion([3, 10]), false);
  assert.equal(isSupportedVersion([4, 0]), true);
  assert.equal(isSupportedVersion(null), false);
});

test('probe reports version, plan_lsp importability and version; a missing binary is not ok', async () => {
  const probe = await probeInterpreter('python3', tmpdir());
  assert.equal(probe.ok, true);
  assert.equal(probe.version?.[0], 3);
  assert.equal(typeof probe.hasPlanLsp, 'boolean');
  const missing = await probeInterpreter('/nonexistent/python');
  assert.equal(missing.ok, false);
  assert.match(cannotStartMessage({ python: '/nonexistent/python', source: 'setting' }, missing), /planLsp\.python/);
  assert.match(
    cannotStartMessage({ python: 'python3', source: 'default' }, { ok: true, version: [3, 12], hasPlanLsp: false }),
    /cannot import plan_lsp/,
  );
});

test('status bar: mode, permission mode and, in plan mode, the shell protection', () => {
  assert.equal(statusBarText({ mode: 'plan', permissionMode: 'ask' }), '$(eye) Plan · Ask before edits');
  assert.equal(statusBarText({ mode: 'plan', permissionMode: 'ask', planShell: 'sandboxed', sandbox: 'bubblewrap' }), '$(eye) Plan · Ask before edits · $(shield) bubblewrap');
  assert.equal(statusBarText({ mode: 'plan', permissionMode: 'strict', planShell: 'classified', sandbox: null }), '$(eye) Plan · Ask before everything · $(warning) classifier only');
  assert.equal(statusBarText({ mode: 'plan', permissionMode: 'ask', planShell: 'off' }), '$(eye) Plan · Ask before edits · $(circle-slash) no shell');
  assert.equal(statusBarText({ mode: 'build', permissionMode: 'auto_edit', planShell: 'sandboxed', sandbox: 'landlock' }), '$(tools) Build · Auto-accept edits');
  assert.equal(shellProtectionText({ planShell: 'sandboxed' }), '$(shield) sandboxed');
  const tooltip = statusBarTooltip({ mode: 'plan', permissionMode: 'ask', planStatus: 'none', running: false, planShell: 'sandboxed', sandbox: 'landlock', planNetwork: true });
  assert.match(tooltip, /Plan-mode shell: sandboxed \(landlock\)/);
  assert.match(tooltip, /network/);
  assert.match(statusBarTooltip({ mode: 'build', permissionMode: 'yolo', planStatus: 'approved', running: true }), /agent running/);
  // While the server's sandbox self-test runs: no shield yet, the tooltip says so.
  const checking = { mode: 'plan' as const, permissionMode: 'ask' as const, planShell: null, sandbox: null };
  assert.equal(statusBarText(checking), '$(eye) Plan · Ask before edits');
  assert.match(
    statusBarTooltip({ ...checking, planStatus: 'none', running: false, shellProtection: 'checking: the sandbox self-test is running' }),
    /Plan-mode shell: checking: the sandbox self-test is running/,
  );
});
