import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ChatEvent, ChatItem, ChatState, MAX_ITEMS, applyUpdate, initialChatState, pendingRequests, reduce, todoProgress } from '../webview/chatState';
import type { SessionState } from '../wireTypes';

const session: SessionState = {
  sessionId: 's1', mode: 'plan', permissionMode: 'ask', planUri: null, planStatus: 'none',
  outcome: 'never_planned', todos: [], running: false,
};

function run(events: ChatEvent[], start: ChatState = initialChatState()): ChatState {
  return events.reduce(reduce, start);
}

function only<T extends ChatItem['type']>(state: ChatState, type: T): Extract<ChatItem, { type: T }>[] {
  return state.items.filter((i): i is Extract<ChatItem, { type: T }> => i.type === type);
}

test('streamed text deltas of one run coalesce into one assistant message', () => {
  const s = run([
    { type: 'userPrompt', text: 'hi' },
    { type: 'update', update: { runId: 'r1', kind: 'text', text: 'Hel' } },
    { type: 'update', update: { runId: 'r1', kind: 'text', text: 'lo **world**' } },
  ]);
  const assistant = only(s, 'assistant');
  assert.equal(assistant.length, 1);
  assert.equal(assistant[0].text, 'Hello **world**');
  assert.equal(s.running, true);
  assert.equal(s.runId, 'r1');
});

test('text after a tool card starts a new assistant message', () => {
  const s = run([
    { type: 'update', update: { runId: 'r1', kind: 'text', text: 'a' } },
    { type: 'update', update: { runId: 'r1', kind: 'toolCall', toolCallId: 'c1', name: 'read_file', arguments: { path: 'README.md' } } },
    { type: 'update', update: { runId: 'r1', kind: 'text', text: 'b' } },
  ]);
  assert.deepEqual(only(s, 'assistant').map((a) => a.text), ['a', 'b']);
});

test('a tool call is running until its result marks it allowed', () => {
  let s = run([{ type: 'update', update: { runId: 'r1', kind: 'toolCall', toolCallId: 'c1', name: 'read_file', arguments: { path: 'README.md' } } }]);
  assert.equal(only(s, 'tool')[0].status, 'running');
  assert.match(only(s, 'tool')[0].args, /README\.md/);
  s = applyUpdate(s, { runId: 'r1', kind: 'toolResult', toolCallId: 'c1', result: 'contents' });
  const [tool] = only(s, 'tool');
  assert.equal(tool.status, 'done');
  assert.equal(tool.result, 'contents');
});

test('a blocked update marks the matching call blocked with its reasons', () => {
  const s = run([
    { type: 'update', update: { runId: 'r1', kind: 'toolCall', toolCallId: 'c2', name: 'write_file', arguments: { path: 'a.py' } } },
    { type: 'update', update: { runId: 'r1', kind: 'blocked', toolCallId: 'c2', name: 'write_file', reasons: ['plan mode', 'side_effect tool'] } },
    { type: 'update', update: { runId: 'r1', kind: 'toolResult', toolCallId: 'c2', result: { error: 'tool_not_allowed' } } },
  ]);
  const tools = only(s, 'tool');
  assert.equal(tools.length, 1);
  assert.equal(tools[0].status, 'blocked');
  assert.equal(tools[0].reason, 'plan mode; side_effect tool');
});

test('a blocked update without a prior call creates a blocked card', () => {
  const s = run([{ type: 'update', update: { runId: 'r1', kind: 'blocked', tool: 'bash', reason: 'write:filesystem' } }]);
  const [tool] = only(s, 'tool');
  assert.equal(tool.name, 'bash');
  assert.equal(tool.status, 'blocked');
  assert.equal(tool.reason, 'write:filesystem');
});

test('a tool_not_allowed observation alone marks the card blocked', () => {
  const s = run([
    { type: 'update', update: { kind: 'toolCall', name: 'bash', arguments: { command: 'rm -rf x' } } },
    { type: 'update', update: { kind: 'toolResult', name: 'bash', result: '{"error": "tool_not_allowed", "reason": "plan"}' } },
  ]);
  assert.equal(only(s, 'tool')[0].status, 'blocked');
});

test('a failed result is shown as failed', () => {
  const s = run([
    { type: 'update', update: { kind: 'toolCall', toolCallId: 'x', name: 'edit_file' } },
    { type: 'update', update: { kind: 'toolResult', toolCallId: 'x', ok: false, result: 'old_text not found' } },
  ]);
  assert.equal(only(s, 'tool')[0].status, 'failed');
});

test('permission request puts the tool in waiting; answering allow resumes it, deny blocks it', () => {
  const base = run([{ type: 'update', update: { kind: 'toolCall', toolCallId: 'c', name: 'bash', arguments: { command: 'make' } } }]);
  const waiting = reduce(base, { type: 'permissionRequest', requestId: 'p1', params: { tool: 'bash', summary: 'make', options: ['allow_once', 'reject_once'] } });
  assert.equal(only(waiting, 'tool')[0].status, 'waiting');
  const [card] = only(waiting, 'permission');
  assert.deepEqual(card.options.map((o) => o.optionId), ['allow_once', 'reject_once']);
  assert.deepEqual(pendingRequests(waiting), ['p1']);

  const allowed = reduce(waiting, { type: 'permissionAnswered', requestId: 'p1', optionId: 'allow_once' });
  assert.equal(only(allowed, 'tool')[0].status, 'running');
  assert.equal(only(allowed, 'permission')[0].answer, 'allow_once');
  assert.deepEqual(pendingRequests(allowed), []);

  const denied = reduce(waiting, { type: 'permissionAnswered', requestId: 'p1', optionId: 'reject_always' });
  assert.equal(only(denied, 'tool')[0].status, 'blocked');
  assert.equal(only(denied, 'tool')[0].reason, 'denied by the user');
});

test('question request and answers', () => {
  const s = run([
    { type: 'questionRequest', requestId: 'q1', params: { questions: [{ id: 'db', text: 'Which DB?', options: ['sqlite', 'pg'] }] } },
    { type: 'questionAnswered', requestId: 'q1', answers: { db: ['pg'] } },
  ]);
  assert.deepEqual(only(s, 'question')[0].answers, { db: ['pg'] });
  const dismissed = run([
    { type: 'questionRequest', requestId: 'q1', params: { questions: [] } },
    { type: 'questionAnswered', requestId: 'q1', answers: null },
  ]);
  assert.equal(only(dismissed, 'question')[0].answers, null);
});

test('modeChanged updates the session mode; an embedded state wins', () => {
  let s = reduce(initialChatState(), { type: 'state', state: session });
  s = applyUpdate(s, { kind: 'modeChanged', mode: 'build' });
  assert.equal(s.session?.mode, 'build');
  s = applyUpdate(s, { kind: 'modeChanged', state: { ...session, mode: 'plan', permissionMode: 'yolo' } });
  assert.equal(s.session?.mode, 'plan');
  assert.equal(s.session?.permissionMode, 'yolo');
  assert.ok(only(s, 'notice').some((n) => n.text.startsWith('Mode: Build')));
});

test('todos replace the list; progress counts completed', () => {
  let s = reduce(initialChatState(), { type: 'state', state: session });
  s = applyUpdate(s, { kind: 'todos', todos: [{ content: 'a', status: 'completed' }, { content: 'b', status: 'in_progress' }] });
  assert.equal(s.session?.todos.length, 2);
  assert.deepEqual(todoProgress(s.session?.todos ?? []), { done: 1, total: 2 });
});

test('planDraft updates one card per run and marks the plan drafting', () => {
  let s = reduce(initialChatState(), { type: 'state', state: session });
  s = applyUpdate(s, { runId: 'r', kind: 'planDraft', uri: 'file:///w/.plan-lsp/plans/PLAN.md', chars: 10 });
  s = applyUpdate(s, { runId: 'r', kind: 'planDraft', chars: 50 });
  const drafts = only(s, 'planDraft');
  assert.equal(drafts.length, 1);
  assert.equal(drafts[0].chars, 50);
  assert.equal(drafts[0].uri, 'file:///w/.plan-lsp/plans/PLAN.md');
  assert.equal(s.session?.planStatus, 'drafting');
});

test('done and promptEnded stop the run; open tool cards end as failed', () => {
  let s = run([
    { type: 'userPrompt', text: 'go' },
    { type: 'update', update: { runId: 'r', kind: 'toolCall', toolCallId: 'c', name: 'bash' } },
  ]);
  s = applyUpdate(s, { runId: 'r', kind: 'done', stopReason: 'end_turn' });
  assert.equal(s.running, false);
  s = reduce(s, { type: 'promptEnded', stopReason: 'cancelled' });
  assert.equal(only(s, 'tool')[0].status, 'failed');
  assert.ok(only(s, 'notice').some((n) => n.text === 'Stopped.'));
});

test('error updates become error notices', () => {
  const s = applyUpdate(initialChatState(), { kind: 'error', message: 'provider failed' });
  assert.deepEqual(only(s, 'notice').map((n) => [n.level, n.text]), [['error', 'provider failed']]);
});

test('unknown kinds leave the state unchanged', () => {
  const s = initialChatState();
  assert.equal(applyUpdate(s, { kind: 'somethingNew' }), s);
});

test('snapshot replaces the state; items are capped', () => {
  let s = initialChatState();
  for (let i = 0; i < MAX_ITEMS + 10; i++) s = reduce(s, { type: 'userPrompt', text: String(i) });
  assert.equal(s.items.length, MAX_ITEMS);
  assert.equal((s.items[s.items.length - 1] as { text: string }).text, String(MAX_ITEMS + 9));
  assert.equal(reduce(initialChatState(), { type: 'snapshot', state: s }), s);
});

test('the reducer never mutates its input', () => {
  const s = run([{ type: 'update', update: { runId: 'r', kind: 'text', text: 'a' } }]);
  const frozen = JSON.stringify(s);
  reduce(s, { type: 'update', update: { runId: 'r', kind: 'text', text: 'b' } });
  assert.equal(JSON.stringify(s), frozen);
});

test('server payload shapes: blocked with an empty reason falls back to the error code; deviation notice', () => {
  let s = run([
    { type: 'update', update: { runId: 'r', kind: 'toolCall', toolCallId: 'c', tool: 'write_file', arguments: { path: 'x' } } },
    { type: 'update', update: { runId: 'r', kind: 'blocked', toolCallId: 'c', tool: 'write_file', error: 'tool_not_allowed', reason: '' } },
    { type: 'update', update: { runId: 'r', kind: 'toolResult', toolCallId: 'c', tool: 'write_file', isError: true, content: '{"error": "tool_not_allowed"}' } },
  ]);
  const [tool] = only(s, 'tool');
  assert.equal(tool.name, 'write_file');
  assert.equal(tool.status, 'blocked');
  assert.equal(tool.reason, 'tool_not_allowed');
  s = applyUpdate(s, { runId: 'r', kind: 'deviation', path: 'b.py', message: 'b.py was changed but the approved plan never mentions it' });
  assert.equal(only(s, 'notice').at(-1)?.level, 'error');
});

test('modeChanged carries planStatus', () => {
  let s = reduce(initialChatState(), { type: 'state', state: { ...session, planStatus: 'submitted' } });
  s = applyUpdate(s, { kind: 'modeChanged', mode: 'build', permissionMode: 'ask', planStatus: 'approved', cause: 'plan_approved' });
  assert.equal(s.session?.planStatus, 'approved');
  assert.equal(s.session?.mode, 'build');
});

test('a run that ends with plan_submitted says the plan is ready for review', () => {
  const s = applyUpdate(run([{ type: 'userPrompt', text: 'x' }]), { runId: 'r', kind: 'done', stopReason: 'plan_submitted' });
  assert.match(only(s, 'notice').at(-1)?.text ?? '', /Plan submitted/);
  assert.equal(s.running, false);
});
