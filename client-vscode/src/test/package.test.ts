import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CARD_COMMANDS, WALKTHROUGH_ID } from '../webview/setupCard';

const ROOT = join(__dirname, '..', '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const declared = new Set<string>(pkg.contributes.commands.map((c: { command: string }) => c.command));

test('the walkthrough covers install → model → first plan → approve, with working links and media', () => {
  const [walkthrough] = pkg.contributes.walkthroughs;
  assert.deepEqual(walkthrough.steps.map((s: { id: string }) => s.id), ['install', 'model', 'plan', 'approve']);
  for (const step of walkthrough.steps) {
    for (const [, command] of String(step.description).matchAll(/\(command:([\w.]+)\)/g)) {
      assert.ok(declared.has(command), `${step.id} links to an undeclared command ${command}`);
    }
    assert.ok(existsSync(join(ROOT, step.media.markdown)), `${step.id}: ${step.media.markdown} is missing`);
    assert.ok(step.completionEvents.length > 0, `${step.id} never completes`);
  }
  // extension.ts opens it by this id.
  assert.equal(`${pkg.publisher}.${pkg.name}#${walkthrough.id}`, WALKTHROUGH_ID);
});

test('menus and setup-card buttons name declared commands', () => {
  for (const entries of Object.values(pkg.contributes.menus) as { command: string }[][]) {
    for (const entry of entries) assert.ok(declared.has(entry.command), entry.command);
  }
  for (const command of Object.values(CARD_COMMANDS)) assert.ok(declared.has(command), command);
});

test("the extension's commands never take a server command's id (the language client registers those itself)", () => {
  // handlers.py's COMMANDS table: the ids the server advertises in executeCommandProvider.
  const handlers = readFileSync(join(ROOT, '..', 'plan_lsp', 'server', 'handlers.py'), 'utf8');
  const table = /^COMMANDS[^{]*\{([\s\S]*?)^\}/m.exec(handlers);
  assert.ok(table, 'no COMMANDS table in plan_lsp/server/handlers.py');
  const serverCommands = [...table[1].matchAll(/"(planLsp\.[\w.]+)"/g)].map((m) => m[1]);
  assert.ok(serverCommands.includes('planLsp.approvePlan'), serverCommands.join(', '));
  for (const command of serverCommands) assert.ok(!declared.has(command), `${command} is both a server and a client command`);
  assert.ok(declared.has('planLsp.client.compact'), 'Compact Conversation is not declared');
});

test("the proposal diff's Allow / Deny buttons are words, not bare icons", () => {
  // A title-bar command without an icon is shown by its title.
  for (const id of ['planLsp.client.allowProposal', 'planLsp.client.denyProposal']) {
    const command = pkg.contributes.commands.find((c: { command: string }) => c.command === id);
    assert.equal(command.icon, undefined, `${id} would show as an icon only`);
    assert.match(command.title, /^(Allow|Deny) /);
  }
});

test('palette commands that act on a pending request are offered only while one is pending', () => {
  const palette = new Map<string, string>(pkg.contributes.menus.commandPalette.map((e: { command: string; when: string }) => [e.command, e.when]));
  for (const id of ['planLsp.client.approve', 'planLsp.client.reject', 'planLsp.client.rejectWithFeedback']) {
    assert.equal(palette.get(id), 'planLsp.planAwaitsDecision', id);
  }
  assert.equal(palette.get('planLsp.client.allowProposal'), 'planLsp.proposalPending');
  assert.equal(palette.get('planLsp.client.cancel'), 'planLsp.running');
  // The controller sets these context keys (a typo would hide the commands for good).
  const controller = readFileSync(join(ROOT, 'src', 'controller.ts'), 'utf8');
  for (const key of ['planLsp.planAwaitsDecision', 'planLsp.running']) assert.ok(controller.includes(`'${key}'`), key);
});

test('the mode toggle is Alt+M while the chat has the focus: Tab and Shift+Tab move the focus', () => {
  const [binding, ...others] = pkg.contributes.keybindings.filter((k: { command: string }) => k.command === 'planLsp.client.toggleMode');
  assert.equal(others.length, 0);
  assert.equal(binding.key, 'alt+m');
  assert.match(binding.when, /planLsp\.chatFocused/);
  assert.ok(!pkg.contributes.keybindings.some((k: { key: string }) => /tab/i.test(k.key)), 'a keybinding takes Tab');
});
