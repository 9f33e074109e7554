import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ChatEvent, ChatState, initialChatState, reduce } from '../webview/chatState';
import { FocusNow, focusOnChange, focusOnOpen } from '../webview/focus';
import type { ProviderStatus, SessionState } from '../wireTypes';

const configured: ProviderStatus = { name: 'openai', model: 'm', baseUrl: 'http://127.0.0.1:9/v1', configured: true, problem: null };
const unconfigured: ProviderStatus = { ...configured, model: '', configured: false, problem: 'no model' };

function running(provider: ProviderStatus): ChatState {
  const session: SessionState = {
    sessionId: 's', mode: 'plan', permissionMode: 'ask', planUri: null, planStatus: 'none', outcome: 'never_planned',
    todos: [], running: false, provider,
  };
  return reduce(reduce(initialChatState(), { type: 'serverStatus', status: 'running' }), { type: 'state', state: session });
}

const then = (state: ChatState, ...events: ChatEvent[]): ChatState => events.reduce(reduce, state);

const permission = (requestId: string): ChatEvent => ({
  type: 'permissionRequest', requestId, path: 'hello.py',
  params: { runId: 'r', tool: 'edit_file', summary: 'edit hello.py', options: ['allow_once', 'reject_once'] },
});
const refused: ChatEvent = { type: 'connectionTest', testing: false, result: { ok: false, code: 'provider_auth', message: 'HTTP 401' } };
const testing: ChatEvent = { type: 'connectionTest', testing: true, result: null };
const connected: ChatEvent = { type: 'connectionTest', testing: false, result: { ok: true, code: null, message: 'm answered' } };

const at = (where: FocusNow['in'], typing = false): FocusNow => ({ in: where, typing });

test('opened with nothing waiting, the chat puts the focus in the prompt', () => {
  assert.deepEqual(focusOnOpen(running(configured)), { to: 'prompt' });
  // A problem card (the key refused) still lets the user type and send.
  assert.deepEqual(focusOnOpen(then(running(configured), refused)), { to: 'prompt' });
});

test('opened while a request waits, the chat puts the focus on that card', () => {
  const waiting = then(running(configured), permission('p1'));
  assert.deepEqual(focusOnOpen(waiting), { to: 'request', requestId: 'p1' });
  const answered = then(waiting, { type: 'permissionAnswered', requestId: 'p1', optionId: 'allow_once' });
  assert.deepEqual(focusOnOpen(answered), { to: 'prompt' });
});

test('opened before a model is set up (nothing can be sent), the chat puts the focus on the set-up card', () => {
  assert.deepEqual(focusOnOpen(running(unconfigured)), { to: 'setupAction' });
  assert.deepEqual(focusOnOpen(then(initialChatState(), { type: 'serverStatus', status: 'error', message: 'no python' })), { to: 'setupAction' });
  // Starting: the card has only Show Log, and asks nothing of the user.
  assert.deepEqual(focusOnOpen(then(initialChatState(), { type: 'startup', step: 'install', progress: 0.3 })), { to: 'prompt' });
});

test('a permission card that appears takes the focus, unless the user is typing in the prompt', () => {
  const before = running(configured);
  const after = then(before, permission('p1'));
  assert.deepEqual(focusOnChange(before, after, at('prompt')), { to: 'request', requestId: 'p1' });
  assert.deepEqual(focusOnChange(before, after, at('nothing')), { to: 'request', requestId: 'p1' });
  assert.deepEqual(focusOnChange(before, after, at('elsewhere')), { to: 'request', requestId: 'p1' });
  assert.equal(focusOnChange(before, after, at('prompt', true)), null);
  // A second request while the user is on the first one's buttons: the focus stays.
  assert.equal(focusOnChange(after, then(after, permission('p2')), at('request')), null);
  // Nothing new: the focus stays.
  assert.equal(focusOnChange(after, after, at('prompt')), null);
});

test('a set-up card that asks for an action takes the focus when it appears, unless the user is typing', () => {
  const before = running(configured);
  const after = then(before, refused);
  assert.deepEqual(focusOnChange(before, after, at('prompt')), { to: 'setupAction' });
  assert.deepEqual(focusOnChange(before, after, at('elsewhere')), { to: 'setupAction' });
  assert.equal(focusOnChange(before, after, at('prompt', true)), null);
  // Cards that ask nothing (testing, connected) do not take it from elsewhere.
  assert.equal(focusOnChange(before, then(before, testing), at('prompt')), null);
  assert.equal(focusOnChange(before, then(before, connected), at('elsewhere')), null);
});

test('the set-up card keeps the focus it has while it changes: on the card while testing, on the first action after', () => {
  const problem = then(running(configured), refused);
  const inTest = then(problem, testing);
  assert.deepEqual(focusOnChange(problem, inTest, at('setup')), { to: 'setupCard' });
  // Tested again and refused again: the same card as before the test, shown anew.
  assert.deepEqual(focusOnChange(inTest, then(inTest, refused), at('setup')), { to: 'setupAction' });
  // Connected: the set-up is done, typing goes on in the prompt.
  assert.deepEqual(focusOnChange(inTest, then(inTest, connected), at('setup')), { to: 'prompt' });
  // The card gone: to the prompt.
  const restarted = then(problem, { type: 'serverStatus', status: 'starting' }, { type: 'startup', step: 'launch' });
  assert.deepEqual(focusOnChange(problem, restarted, at('setup')), { to: 'setupCard' });
  const gone = then(running(configured), { type: 'connectionTest', testing: false, result: null });
  assert.deepEqual(focusOnChange(problem, gone, at('setup')), { to: 'prompt' });
});

test('a key set on the card: the server restarts, the card comes back refused, and the focus with it', () => {
  const problem = then(running(configured), refused);
  // The card's own button had the focus; the restart shows "starting", then no card until the
  // server says its state: the focus falls back to the prompt (the user typed nothing there).
  const starting = then(problem, { type: 'serverStatus', status: 'starting' });
  assert.deepEqual(focusOnChange(problem, starting, at('setup')), { to: 'setupCard' });
  const up = then(starting, { type: 'serverStatus', status: 'running' });
  assert.deepEqual(focusOnChange(starting, up, at('setup')), { to: 'prompt' });
  const session: SessionState = {
    sessionId: 's', mode: 'plan', permissionMode: 'ask', planUri: null, planStatus: 'none', outcome: 'never_planned',
    todos: [], running: false, provider: configured,
  };
  const told = then(up, { type: 'state', state: session }, testing);
  assert.equal(focusOnChange(up, told, at('prompt')), null);
  assert.deepEqual(focusOnChange(told, then(told, refused), at('prompt')), { to: 'setupAction' });
  // Had the user typed in the prompt meanwhile, the focus would stay there.
  assert.equal(focusOnChange(told, then(told, refused), at('prompt', true)), null);
});
