import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Inspected, USER_ONLY_SETTINGS, ignoredSettingsWarning, launchSettingsChanged, readUserSettings } from '../settings';

function inspector(values: Record<string, Inspected>): (key: string) => Inspected | undefined {
  return (key) => values[key];
}

test('every setting is read from user scope; workspace and folder values are ignored and named', () => {
  const read = readUserSettings(inspector({
    python: { globalValue: '/usr/bin/python3.12', workspaceValue: './evil.sh' },
    serverArgs: { workspaceFolderValue: ['--provider', 'scripted', '--script', 'x.json'] },
    baseUrl: { workspaceValue: 'https://attacker.example/v1' },
    model: { globalValue: ' qwen ' },
    permissionMode: { globalValue: 'ask', workspaceValue: 'yolo' },
    planNetwork: { workspaceValue: true },
  }));
  assert.equal(read.settings.python, '/usr/bin/python3.12');
  assert.deepEqual(read.settings.serverArgs, []);
  assert.equal(read.settings.baseUrl, '');
  assert.equal(read.settings.model, 'qwen');
  assert.equal(read.settings.permissionMode, 'ask');
  assert.equal(read.settings.planNetwork, false);
  assert.deepEqual(read.ignored, ['planLsp.python', 'planLsp.serverArgs', 'planLsp.baseUrl', 'planLsp.permissionMode', 'planLsp.planNetwork']);
  const warning = ignoredSettingsWarning(read.ignored) ?? '';
  for (const key of read.ignored) assert.ok(warning.includes(key), key);
  assert.equal(ignoredSettingsWarning([]), null);
});

test('user values of the wrong type fall back to the default and are reported', () => {
  const read = readUserSettings(inspector({
    serverArgs: { globalValue: ['--ok', 3] },
    bootstrap: { globalValue: 'yes' },
    'mcp.servers': { globalValue: [{ name: 'git', command: ['mcp-server-git'] }] },
  }));
  assert.deepEqual(read.settings.serverArgs, []);
  assert.equal(read.settings.bootstrap, true);
  assert.deepEqual(read.settings.mcpServers, [{ name: 'git', command: ['mcp-server-git'] }]);
  assert.deepEqual(read.invalid, ['planLsp.serverArgs', 'planLsp.bootstrap']);
});

test('package.json: every setting is a restricted configuration, and every restricted one exists', () => {
  const pkg = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8'));
  const declared = Object.keys(pkg.contributes.configuration.properties).map((k: string) => k.replace(/^planLsp\./, '')).sort();
  assert.deepEqual(declared, [...USER_ONLY_SETTINGS].sort());
  assert.deepEqual(
    [...pkg.capabilities.untrustedWorkspaces.restrictedConfigurations].sort(),
    USER_ONLY_SETTINGS.map((k) => `planLsp.${k}`).sort(),
  );
  assert.equal(pkg.capabilities.untrustedWorkspaces.supported, 'limited');
  for (const [key, spec] of Object.entries(pkg.contributes.configuration.properties)) {
    const scope = (spec as { scope?: string }).scope;
    // machine/application scopes would hide a workspace value from inspect(), and with it the warning.
    assert.ok(scope === undefined || scope === 'window', `${key} has scope ${scope}`);
  }
});

test('a restart is needed only when the user settings themselves changed', () => {
  const a = readUserSettings(inspector({ model: { globalValue: 'a' } })).settings;
  const b = readUserSettings(inspector({ model: { globalValue: 'a', workspaceValue: 'b' } })).settings;
  const c = readUserSettings(inspector({ model: { globalValue: 'c' } })).settings;
  assert.equal(launchSettingsChanged(a, b), false);
  assert.equal(launchSettingsChanged(a, c), true);
});
