import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ChatEvent, ChatState, failedPromptText, initialChatState, newlyFailedPrompts, reduce } from '../webview/chatState';
import { errorHint, fixAction } from '../webview/setupCard';

function step(state: ChatState, event: ChatEvent): { state: ChatState; restored: string[] } {
  const next = reduce(state, event);
  return { state: next, restored: newlyFailedPrompts(state, next, event) };
}

test('a prompt the model server refused comes back for the input, once, and its Retry finds its text', () => {
  let s = reduce(initialChatState(), { type: 'serverStatus', status: 'running' });
  s = reduce(s, { type: 'userPrompt', text: 'Make the greeting polite' });
  s = reduce(s, { type: 'update', update: { kind: 'prompt', runId: 'r1', text: 'Make the greeting polite' } });
  const failed = step(s, {
    type: 'update',
    update: { kind: 'error', runId: 'r1', code: 'provider_unreachable', message: 'cannot connect', failedPrompt: true, fix: { setting: 'baseUrl' } },
  });
  assert.deepEqual(failed.restored, ['Make the greeting polite']);
  const user = failed.state.items.find((i) => i.type === 'user');
  assert.equal(failedPromptText(failed.state, user?.id ?? -1), 'Make the greeting polite');
  // The run's end does not bring it back a second time.
  assert.deepEqual(step(failed.state, { type: 'update', update: { kind: 'done', runId: 'r1', stopReason: 'error' } }).restored, []);
  assert.deepEqual(step(failed.state, { type: 'promptEnded', stopReason: 'error' }).restored, []);
  // A reload's history shows it failed, and does not put it into the input.
  const history = step(initialChatState(), {
    type: 'history', updates: [{ kind: 'prompt', runId: 'r1', text: 'old', status: 'failed' }],
  });
  assert.deepEqual(history.restored, []);
  assert.equal(failedPromptText(history.state, history.state.items[0].id), 'old');
});

test('a prompt that never reached the server (it is not running) is failed too, with its text kept', () => {
  let s = reduce(initialChatState(), { type: 'userPrompt', text: 'hello' });
  const ended = step(s, { type: 'promptEnded', error: 'The plan-lsp server is not running.' });
  assert.deepEqual(ended.restored, ['hello']);
  s = ended.state;
  assert.equal(s.items.at(-1)?.type, 'notice');
  // A prompt that was answered is never offered again.
  const ok = reduce(reduce(initialChatState(), { type: 'userPrompt', text: 'fine' }), { type: 'promptEnded', stopReason: 'end_turn' });
  assert.equal(failedPromptText(ok, ok.items[0].id), null);
});

test('each error code says what to do in words; buttons never show a setting key', () => {
  assert.match(errorHint('provider_unreachable') ?? '', /did not answer\. Start it .*check the server URL/);
  assert.match(errorHint('provider_auth') ?? '', /API key/);
  assert.match(errorHint('provider_auth', false) ?? '', /^No API key is set/);
  assert.match(errorHint('provider_auth', true) ?? '', /^The model server refused the API key/);
  for (const code of ['provider_unreachable', 'provider_auth', 'provider_model', 'provider_no_tools', 'provider_unconfigured', 'provider_rate_limited', 'provider_failed', 'context_full']) {
    assert.ok(errorHint(code), code);
    const fix = fixAction(code);
    if (fix) assert.doesNotMatch(fix.label, /planLsp\.|setting/i, `${code}: ${fix.label}`);
  }
  assert.equal(errorHint(null), null);
  assert.equal(fixAction('provider_unreachable')?.label, 'Check the Server URL');
});

test('a run the model server failed after some steps offers Retry on its error (planLsp/retry), a refused prompt does not', () => {
  let s = reduce(initialChatState(), { type: 'serverStatus', status: 'running' });
  s = reduce(s, { type: 'userPrompt', text: 'Do it' });
  s = reduce(s, { type: 'update', update: { kind: 'prompt', runId: 'r1', text: 'Do it' } });
  const midway = reduce(s, {
    type: 'update',
    update: { kind: 'error', runId: 'r1', code: 'provider_failed', message: 'HTTP 502 Bad Gateway', failedPrompt: false, retry: true },
  });
  const notice = midway.items.at(-1);
  assert.equal(notice?.type === 'notice' && notice.retryRun, true);
  assert.equal(midway.items.some((i) => i.type === 'user' && i.failed), false);
  const refused = reduce(s, {
    type: 'update',
    update: { kind: 'error', runId: 'r1', code: 'provider_unreachable', message: 'cannot connect', failedPrompt: true, retry: true },
  });
  const last = refused.items.at(-1);
  assert.equal(last?.type === 'notice' && last.retryRun, undefined);
});
