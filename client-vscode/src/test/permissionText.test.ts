import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PERMISSION_MODE_TEXT, permissionAnswerText, permissionModeLabel } from '../permissionText';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PERMISSION_MODES, permissionOptions } from '../wireTypes';
import { statusBarText, statusBarTooltip } from '../statusText';

test('every permission mode has a name in words, never its wire value', () => {
  assert.deepEqual(PERMISSION_MODES.map(permissionModeLabel), [
    'Ask before edits', 'Auto-accept edits', 'Full auto (no questions)', 'Ask before everything',
  ]);
  for (const mode of PERMISSION_MODES) {
    const text = PERMISSION_MODE_TEXT[mode];
    assert.ok(text.detail.length > 20, mode);
    assert.ok(!/\b(ask|auto_edit|yolo|strict)\b/.test(text.label), `${mode}: ${text.label}`);
  }
  assert.equal(permissionModeLabel('future_mode'), 'future_mode');
});

test('the status bar and its tooltip name the permission mode in words', () => {
  const state = { mode: 'plan' as const, permissionMode: 'auto_edit' as const, planShell: 'off' as const, sandbox: null, usage: undefined };
  assert.equal(statusBarText(state), '$(eye) Plan · Auto-accept edits · $(circle-slash) no shell');
  const tooltip = statusBarTooltip({ ...state, planStatus: 'none', running: false, shellProtection: undefined, planNetwork: false });
  assert.match(tooltip, /Permissions: Auto-accept edits — Edits to files inside the workspace run without asking/);
  assert.doesNotMatch(tooltip, /auto_edit/);
  assert.match(statusBarText({ ...state, permissionMode: 'yolo' }), /Full auto \(no questions\)/);
});

test('during a Do run the tooltip says which modes the next request uses after it', () => {
  const state = { mode: 'build' as const, permissionMode: 'auto_edit' as const, planShell: 'off' as const, sandbox: null, usage: undefined };
  const during = statusBarTooltip({
    ...state, planStatus: 'approved', running: true, shellProtection: undefined, planNetwork: false,
    nextRequest: { mode: 'plan', permissionMode: 'ask' },
  });
  assert.match(during, /This run uses: Build · Auto-accept edits/);
  assert.match(during, /After the Do run, the next request runs in: Plan · Ask before edits/);
  const after = statusBarTooltip({ ...state, planStatus: 'approved', running: false, shellProtection: undefined, planNetwork: false, nextRequest: null });
  assert.doesNotMatch(after, /After the Do run/);
});

test('"allow always" says what it covers: this tool on exactly this path or command, this session, this work mode', () => {
  const edit = permissionAnswerText('allow_always', 'edit_file', { path: 'src/a.py', old_text: 'x', new_text: 'y' }, 'build');
  assert.equal(edit.label, 'Allow edits to src/a.py for this session');
  assert.match(edit.title, /edit_file on exactly src\/a\.py \(not other files\) without asking, in Build mode only, until a new session starts/);
  const bash = permissionAnswerText('allow_always', 'bash', { command: 'npm test' }, 'build');
  assert.equal(bash.label, 'Allow “npm test” for this session');
  assert.match(bash.title, /the command “npm test” exactly \(not another command, nor this one with more after it\)/);
  const deny = permissionAnswerText('reject_always', 'write_file', { path: 'b.txt' }, 'build');
  assert.equal(deny.label, 'Deny writing b.txt for this session');
  assert.match(deny.title, /in every mode/);
  const mcp = permissionAnswerText('allow_always', 'mcp__db__query', { sql: 'select 1' }, 'build');
  assert.equal(mcp.label, 'Allow every mcp__db__query call for this session');
  const long = permissionAnswerText('allow_always', 'bash', { command: `echo ${'x'.repeat(100)}` });
  assert.ok(long.label.length < 70 && long.label.includes('…'), long.label);
  assert.deepEqual([permissionAnswerText('allow_once', 'bash').label, permissionAnswerText('reject_once', 'bash').label], ['Allow', 'Deny']);
});

test('a permission request gets buttons labelled for its call', () => {
  const options = permissionOptions(
    { tool: 'edit_file', summary: 'edit hello.py', arguments: { path: 'hello.py' }, options: ['allow_once', 'allow_always', 'reject_once'] },
    'build',
  );
  assert.deepEqual(options.map((o) => o.label), ['Allow', 'Allow edits to hello.py for this session', 'Deny']);
  assert.ok(options.every((o) => o.title));
});

test("the permission-mode setting's choices are described in the same words", () => {
  const pkg = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8'));
  const setting = pkg.contributes.configuration.properties['planLsp.permissionMode'];
  setting.enum.forEach((mode: string, i: number) => assert.ok(setting.enumDescriptions[i].startsWith(`${permissionModeLabel(mode)}:`), mode));
});
