import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  cannotStartMessage,
  chooseInterpreter,
  initializationOptions,
  isNetworkFailure,
  isSupportedVersion,
  pipFailureMessage,
  probeInterpreter,
  serverArguments,
} from '../serverLaunch';
import { statusBarText, statusBarTooltip } from '../statusText';

const settings = { provider: 'openai', model: ' gpt-x ', baseUrl: '', permissionMode: 'ask', plansDir: '', planShell: 'off' };

test('initializationOptions carries the contract keys and leaves empty ones out', () => {
  assert.deepEqual(initializationOptions(settings, 'sk-1'), {
    provider: 'openai', model: 'gpt-x', permissionMode: 'ask', planShell: 'off', apiKey: 'sk-1',
  });
  assert.ok(!('apiKey' in initializationOptions(settings, undefined)));
  assert.ok(!('planShell' in initializationOptions({ ...settings, planShell: '' }, undefined)));
});

test('server argv: python -m plan_lsp serve plus the extra settings args', () => {
  assert.deepEqual(serverArguments(['--provider', 'scripted', '--script', 's.json']), [
    '-m', 'plan_lsp', 'serve', '--provider', 'scripted', '--script', 's.json',
  ]);
});

test('interpreter order: setting, Python extension, python3', () => {
  assert.deepEqual(chooseInterpreter('/v/bin/python', '/ext/python'), { python: '/v/bin/python', source: 'setting' });
  assert.deepEqual(chooseInterpreter('', '/ext/python'), { python: '/ext/python', source: 'python-extension' });
  assert.deepEqual(chooseInterpreter(undefined, undefined), { python: 'python3', source: 'default' });
});

test('version floor is 3.11', () => {
  assert.equal(isSupportedVersion([3, 11]), true);
  assert.equal(isSupportedVersion([3, 10]), false);
  assert.equal(isSupportedVersion([4, 0]), true);
  assert.equal(isSupportedVersion(null), false);
});

test('pip network failures get the network fix', () => {
  const log = "WARNING: Retrying ... Failed to establish a new connection: [Errno -3] Temporary failure in name resolution\nERROR: Could not find a version that satisfies the requirement pygls";
  assert.equal(isNetworkFailure(log), true);
  assert.match(pipFailureMessage(log, '/venv/bin/python'), /could not reach a package index.*PIP_INDEX_URL/);
  assert.equal(isNetworkFailure('error: command gcc failed'), false);
  assert.match(pipFailureMessage('error: command gcc failed', 'p'), /planLsp\.python/);
});

test('probe reports version and plan_lsp importability; a missing binary is not ok', async () => {
  const probe = await probeInterpreter('python3');
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

test('status bar text shows the mode icon and permission mode', () => {
  assert.equal(statusBarText({ mode: 'plan', permissionMode: 'ask' }), '$(eye) Plan · ask');
  assert.equal(statusBarText({ mode: 'build', permissionMode: 'auto_edit' }), '$(tools) Build · auto-edit');
  assert.match(statusBarTooltip({ mode: 'build', permissionMode: 'yolo', planStatus: 'approved', running: true }), /agent running/);
});
