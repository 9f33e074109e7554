import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ChatEvent,
  ChatItem,
  ChatState,
  MAX_ITEMS,
  applyUpdate,
  canSend,
  findTool,
  initialChatState,
  isBusy,
  parseArguments,
  pendingRequests,
  planPanel,
  reduce,
  todoProgress,
  visibleTodos,
} from '../webview/chatState';
import type { PlanLspUpdate, SessionState } from '../wireTypes';

const session: SessionState = {
  sessionId: 's1', mode: 'plan', permissionMode: 'ask', planUri: null, planStatus: 'none',
  outcome: 'never_planned', todos: [], running: false,
};

function run(events: ChatEvent[], start: ChatState = initialChatState()): ChatState {
  return events.reduce(reduce, start);
}

function updates(list: PlanLspUpdate[], start: ChatState = initialChatState()): ChatState {
  return list.reduce(applyUpdate, start);
}

function only<T extends ChatItem['type']>(state: ChatState, type: T): Extract<ChatItem, { type: T }>[] {
  return state.items.filter((i): i is Extract<ChatItem, { type: T }> => i.type === type);
}

/** One request's tool calls as the server reports them: call, (blocked), result. */
function call(runId: string, callId: string, tool: string, args: object, result: string, blocked = false): PlanLspUpdate[] {
  const list: PlanLspUpdate[] = [{ runId, kind: 'toolCall', toolCallId: callId, tool, arguments: JSON.stringify(args) }];
  if (blocked) list.push({ runId, kind: 'blocked', toolCallId: callId, tool, error: 'tool_not_allowed', reason: 'plan mode' });
  list.push({ runId, kind: 'toolResult', toolCallId: callId, tool, isError: blocked, content: result });
  return list;
}

test('streamed text deltas of one run coalesce into one assistant message', () => {
  const s = run([
    { type: 'userPrompt', text: 'hi' },
    { type: 'update', update: { runId: 'r1', kind: 'text', delta: 'Hel' } },
    { type: 'update', update: { runId: 'r1', kind: 'text', delta: 'lo **world**' } },
  ]);
  const assistant = only(s, 'assistant');
  assert.equal(assistant.length, 1);
  assert.equal(assistant[0].text, 'Hello **world**');
  assert.equal(s.running, true);
  assert.equal(s.runId, 'r1');
  assert.equal(only(s, 'user')[0].runId, 'r1', 'the prompt takes the run it started');
});

test('text after a tool card starts a new assistant message', () => {
  const s = updates([
    { runId: 'r1', kind: 'text', delta: 'a' },
    { runId: 'r1', kind: 'toolCall', toolCallId: 'c1', tool: 'read_file', arguments: '{"path": "README.md"}' },
    { runId: 'r1', kind: 'text', delta: 'b' },
  ]);
  assert.deepEqual(only(s, 'assistant').map((a) => a.text), ['a', 'b']);
});

test('a tool call is running until its result marks it done; arguments are parsed', () => {
  let s = updates([{ runId: 'r1', kind: 'toolCall', toolCallId: 'c1', tool: 'read_file', arguments: '{"path": "README.md"}' }]);
  assert.equal(only(s, 'tool')[0].status, 'running');
  assert.deepEqual(only(s, 'tool')[0].input, { path: 'README.md' });
  s = applyUpdate(s, { runId: 'r1', kind: 'toolResult', toolCallId: 'c1', tool: 'read_file', isError: false, content: 'contents' });
  const [tool] = only(s, 'tool');
  assert.equal(tool.status, 'done');
  assert.equal(tool.result, 'contents');
});

test('a result the server cut says how much the model read beyond it', () => {
  let s = updates([{ runId: 'r1', kind: 'toolCall', toolCallId: 'c1', tool: 'read_file', arguments: '{"path": "big.txt"}' }]);
  s = applyUpdate(s, { runId: 'r1', kind: 'toolResult', toolCallId: 'c1', tool: 'read_file', isError: false, content: 'x'.repeat(4000), omitted: 12345 });
  assert.equal(only(s, 'tool')[0].result, `${'x'.repeat(2000)}\n… (14,345 more characters)`);
  s = applyUpdate(s, { runId: 'r1', kind: 'toolResult', toolCallId: 'c2', tool: 'read_file', isError: false, content: 'short', omitted: 7 });
  assert.equal(only(s, 'tool')[1].result, 'short\n… (7 more characters)');
});

test('cards are keyed by run and call: ids numbered from zero per request never merge cards', () => {
  // Two runs whose provider numbers tool-call ids from zero in every request, and two
  // requests of one run that reuse an id: five calls, five cards, each with its own result.
  const s = updates([
    ...call('r1', 'call_0', 'read_file', { path: 'a.py' }, 'A'),
    ...call('r1', 'call_0', 'write_file', { path: 'a.py', content: 'x' }, 'refused', true),
    ...call('r1', 'call_1', 'bash', { command: 'rm -rf .' }, 'refused', true),
    ...call('r2', 'call_0', 'read_file', { path: 'b.py' }, 'B'),
    ...call('r2', 'call_0', 'edit_file', { path: 'b.py', old_text: 'b', new_text: 'c' }, 'ok'),
  ]);
  const tools = only(s, 'tool');
  assert.deepEqual(
    tools.map((t) => [t.runId, t.callId, t.name, t.status, t.result]),
    [
      ['r1', 'call_0', 'read_file', 'done', 'A'],
      ['r1', 'call_0', 'write_file', 'blocked', 'refused'],
      ['r1', 'call_1', 'bash', 'blocked', 'refused'],
      ['r2', 'call_0', 'read_file', 'done', 'B'],
      ['r2', 'call_0', 'edit_file', 'done', 'ok'],
    ],
  );
  assert.equal(tools[1].reason, 'plan mode');
});

test('findTool: a result of one run never lands on another run\'s open card', () => {
  const s = updates([
    { runId: 'r1', kind: 'toolCall', toolCallId: 'call_0', tool: 'bash', arguments: '{}' },
    { runId: 'r2', kind: 'toolCall', toolCallId: 'call_0', tool: 'bash', arguments: '{}' },
  ]);
  assert.equal(findTool(s, 'r1', 'call_0', 'bash', 'open'), 0);
  assert.equal(findTool(s, 'r2', 'call_0', 'bash', 'open'), 1);
  assert.equal(findTool(s, 'r3', 'call_0', 'bash', 'open'), -1);
  const done = applyUpdate(s, { runId: 'r1', kind: 'toolResult', toolCallId: 'call_0', tool: 'bash', isError: false, content: 'ok' });
  assert.deepEqual(only(done, 'tool').map((t) => t.status), ['done', 'running']);
});

test('a blocked update without a prior call creates a blocked card; empty reason falls back to the error', () => {
  let s = updates([{ runId: 'r1', kind: 'blocked', tool: 'bash', reason: 'write:filesystem' }]);
  assert.deepEqual(only(s, 'tool').map((t) => [t.name, t.status, t.reason]), [['bash', 'blocked', 'write:filesystem']]);
  s = updates([{ runId: 'r', kind: 'blocked', toolCallId: 'c', tool: 'write_file', error: 'tool_not_allowed', reason: '' }]);
  assert.equal(only(s, 'tool')[0].reason, 'tool_not_allowed');
});

test('permission request puts the run\'s tool in waiting; allow resumes it, deny blocks it', () => {
  const base = updates([
    { runId: 'r0', kind: 'toolCall', toolCallId: 'c', tool: 'bash', arguments: '{"command": "ls"}' },
    { runId: 'r1', kind: 'toolCall', toolCallId: 'c', tool: 'bash', arguments: '{"command": "make"}' },
  ]);
  const waiting = reduce(base, {
    type: 'permissionRequest', requestId: 'p1', params: { runId: 'r1', tool: 'bash', summary: 'make', options: ['allow_once', 'reject_once'] },
  });
  assert.deepEqual(only(waiting, 'tool').map((t) => t.status), ['running', 'waiting']);
  const [card] = only(waiting, 'permission');
  assert.deepEqual(card.options.map((o) => o.optionId), ['allow_once', 'reject_once']);
  assert.equal(card.path, null);
  assert.deepEqual(pendingRequests(waiting), ['p1']);

  const allowed = reduce(waiting, { type: 'permissionAnswered', requestId: 'p1', optionId: 'allow_once' });
  assert.deepEqual(only(allowed, 'tool').map((t) => t.status), ['running', 'running']);
  assert.equal(only(allowed, 'permission')[0].answer, 'allow_once');
  assert.deepEqual(pendingRequests(allowed), []);

  const denied = reduce(waiting, { type: 'permissionAnswered', requestId: 'p1', optionId: 'reject_always' });
  assert.equal(only(denied, 'tool')[1].status, 'blocked');
  assert.equal(only(denied, 'tool')[1].reason, 'denied by the user');
});

test('the server\'s decision lands on the card it was asked on, never a second card', () => {
  const asked = reduce(updates([
    { runId: 'r1', kind: 'toolCall', toolCallId: 'c', tool: 'bash', arguments: '{"command": "make"}' },
    { runId: 'r1', kind: 'permission', tool: 'bash', summary: 'make' },
  ]), {
    type: 'permissionRequest', requestId: 'p1', params: { runId: 'r1', tool: 'bash', summary: 'make', options: ['allow_once', 'reject_once'] },
  });
  const answered = reduce(asked, { type: 'permissionAnswered', requestId: 'p1', optionId: 'allow_once' });
  const told = applyUpdate(answered, { runId: 'r1', kind: 'permission', tool: 'bash', summary: 'make', decision: 'allow_once' });
  assert.equal(only(told, 'permission').length, 1);
  assert.equal(only(told, 'permission')[0].told, true);
  assert.equal(only(told, 'tool')[0].status, 'running');
});

test('a reload shows each decision from the history: what was allowed and what was denied', () => {
  const s = updates([
    { runId: 'r1', kind: 'toolCall', toolCallId: 'c1', tool: 'edit_file', arguments: '{"path": "a.py"}' },
    { runId: 'r1', kind: 'permission', tool: 'edit_file', summary: 'edit a.py' },
    { runId: 'r1', kind: 'permission', tool: 'edit_file', summary: 'edit a.py', decision: 'reject_once' },
    { runId: 'r1', kind: 'toolResult', toolCallId: 'c1', tool: 'edit_file', isError: true, content: 'denied' },
    { runId: 'r1', kind: 'toolCall', toolCallId: 'c2', tool: 'edit_file', arguments: '{"path": "b.py"}' },
    { runId: 'r1', kind: 'permission', tool: 'edit_file', summary: 'edit b.py' },
    { runId: 'r1', kind: 'permission', tool: 'edit_file', summary: 'edit b.py', decision: 'allow_once' },
  ]);
  const cards = only(s, 'permission');
  assert.deepEqual(cards.map((c) => [c.summary, c.answer, c.options[0].label]), [
    ['edit a.py', 'reject_once', 'Denied'],
    ['edit b.py', 'allow_once', 'Allowed once'],
  ]);
  assert.deepEqual(pendingRequests(s), []);
  assert.deepEqual(only(s, 'tool').map((t) => [t.status, t.reason]), [['blocked', 'denied by the user'], ['running', undefined]]);
});

test('an edit permission carries the file whose change can be previewed', () => {
  const s = reduce(initialChatState(), {
    type: 'permissionRequest', requestId: 'p', path: 'hello.py',
    params: { runId: 'r', tool: 'edit_file', summary: 'edit hello.py', arguments: { path: 'hello.py', old_text: 'a', new_text: 'b' } },
  });
  assert.equal(only(s, 'permission')[0].path, 'hello.py');
});

test('question request and answers', () => {
  const s = run([
    { type: 'questionRequest', requestId: 'q1', params: { questions: [{ id: 'db', text: 'Which DB?', options: ['sqlite', 'pg'] }] } },
    { type: 'questionAnswered', requestId: 'q1', answers: { db: ['pg'] } },
  ]);
  assert.deepEqual(only(s, 'question')[0].answers, { db: ['pg'] });
});

test('the session is only what the server pushed: modeChanged, planDraft and todos never patch it', () => {
  let s = reduce(initialChatState(), { type: 'state', state: session });
  s = updates([
    { kind: 'modeChanged', mode: 'build', permissionMode: 'yolo', planStatus: 'approved', cause: 'plan_approved' },
    { runId: 'r', kind: 'planDraft', uri: 'file:///w/.plan-lsp/plans/PLAN.md', status: 'drafting', chars: 10 },
    { kind: 'todos', todos: [{ content: 'a', status: 'completed' }] },
  ], s);
  assert.deepEqual(s.session, session);
  assert.ok(only(s, 'notice').some((n) => n.text === 'Mode: Build (plan approved)'));
  s = reduce(s, { type: 'state', state: { ...session, mode: 'build', planStatus: 'approved', todos: [{ content: 'a', status: 'completed' }] } });
  assert.equal(s.session?.mode, 'build');
  assert.deepEqual(todoProgress(s.session?.todos ?? []), { done: 1, total: 1 });
});

test('planDraft keeps one card per run', () => {
  const s = updates([
    { runId: 'r', kind: 'planDraft', uri: 'file:///w/PLAN.md', chars: 10 },
    { runId: 'r', kind: 'planDraft', uri: 'file:///w/PLAN.md', chars: 50 },
    { runId: 'r2', kind: 'planDraft', uri: 'file:///w/PLAN.md', chars: 5 },
  ]);
  assert.deepEqual(only(s, 'planDraft').map((d) => [d.runId, d.chars]), [['r', 50], ['r2', 5]]);
});

test('done and promptEnded stop the run; open tool cards end as failed', () => {
  let s = run([
    { type: 'userPrompt', text: 'go' },
    { type: 'update', update: { runId: 'r', kind: 'toolCall', toolCallId: 'c', tool: 'bash', arguments: '{}' } },
  ]);
  s = applyUpdate(s, { runId: 'r', kind: 'done', stopReason: 'end_turn' });
  assert.equal(s.runId, null);
  s = reduce(s, { type: 'promptEnded', stopReason: 'cancelled' });
  assert.equal(s.running, false);
  assert.equal(only(s, 'tool')[0].status, 'failed');
  assert.ok(only(s, 'notice').some((n) => n.text === 'Stopped.'));
});

test('an error with a code before the model answered marks the prompt failed; the fix travels with the notice', () => {
  const s = run([
    { type: 'userPrompt', text: 'make a plan' },
    { type: 'update', update: { runId: 'r1', kind: 'prompt', origin: 'prompt', text: 'make a plan' } },
    { type: 'update', update: { runId: 'r1', kind: 'error', message: 'the model server rejected the API key (HTTP 401)', code: 'provider_auth', fix: { setting: 'apiKey' }, failedPrompt: true } },
    { type: 'update', update: { runId: 'r1', kind: 'done', stopReason: 'error' } },
    { type: 'promptEnded', stopReason: 'error' },
  ]);
  const [prompt] = only(s, 'user');
  assert.equal(prompt.failed, true);
  assert.equal(prompt.runId, 'r1');
  const [notice] = only(s, 'notice');
  assert.equal(notice.code, 'provider_auth');
  assert.deepEqual(notice.fix, { setting: 'apiKey' });
  // The next prompt that the model answers is not marked.
  const ok = run([
    { type: 'userPrompt', text: 'again' },
    { type: 'update', update: { runId: 'r2', kind: 'text', delta: 'Sure.' } },
    { type: 'update', update: { runId: 'r2', kind: 'error', message: 'rate limited', code: 'provider_rate_limited', failedPrompt: false } },
  ], s);
  assert.deepEqual(only(ok, 'user').map((u) => u.failed), [true, false]);
  // failedPrompt false wins over an unanswered run.
  const kept = run([
    { type: 'userPrompt', text: 'x' },
    { type: 'update', update: { runId: 'r3', kind: 'error', message: 'timeout', code: 'provider_failed', failedPrompt: false } },
  ]);
  assert.equal(only(kept, 'user')[0].failed, false);
});

test('a prompt request that fails outright is marked failed', () => {
  const s = run([{ type: 'userPrompt', text: 'x' }, { type: 'promptEnded', error: 'a run is in progress' }]);
  assert.equal(only(s, 'user')[0].failed, true);
  assert.equal(only(s, 'notice')[0].level, 'error');
});

test('history replaces the view with the server\'s record, prompts included, failed ones marked', () => {
  const stale = run([{ type: 'userPrompt', text: 'from webview memory' }]);
  const s = reduce({ ...stale, session }, {
    type: 'history',
    updates: [
      { runId: 'r1', kind: 'prompt', origin: 'prompt', text: 'make it polite', status: 'failed' },
      { runId: 'r1', kind: 'error', message: 'cannot reach the model server', code: 'provider_unreachable' },
      { runId: 'r2', kind: 'prompt', text: 'make it polite' },
      { runId: 'r2', kind: 'text', delta: 'Reading first.' },
      ...call('r2', 'call_0', 'read_file', { path: 'hello.py' }, "print('hi')"),
      { runId: 'r2', kind: 'toolCall', toolCallId: 'call_0', tool: 'bash', arguments: '{"command": "sleep 9"}' },
      { kind: 'state', state: { ...session, mode: 'build' } },
    ],
  });
  assert.deepEqual(only(s, 'user').map((u) => [u.text, u.failed]), [['make it polite', true], ['make it polite', false]]);
  assert.equal(only(s, 'assistant')[0].text, 'Reading first.');
  assert.deepEqual(only(s, 'tool').map((t) => t.status), ['done', 'failed'], 'no run is going on: open cards ended');
  assert.equal(s.session?.mode, 'plan', 'a state inside the history is not rendered');
  assert.equal(s.running, false);
});

test('a live prompt echo gives this window\'s prompt its run instead of a second bubble', () => {
  const s = run([
    { type: 'userPrompt', text: 'hello' },
    { type: 'update', update: { runId: 'r9', kind: 'prompt', text: 'hello' } },
  ]);
  assert.deepEqual(only(s, 'user').map((u) => [u.text, u.runId]), [['hello', 'r9']]);
});

test('a new session clears the conversation and takes the server\'s state', () => {
  const s = run([
    { type: 'state', state: { ...session, planStatus: 'approved' } },
    { type: 'userPrompt', text: 'x' },
    { type: 'sessionCleared', state: { ...session, sessionId: 's2' } },
  ]);
  assert.deepEqual(s.items, []);
  assert.equal(s.session?.sessionId, 's2');
  assert.equal(s.running, false);
});

test('cancelledCalls marks the cancelled cards', () => {
  const s = updates([
    { runId: 'r', kind: 'toolCall', toolCallId: 'c1', tool: 'bash', arguments: '{"command": "sleep 60"}' },
    { kind: 'cancelledCalls', calls: [{ tool: 'bash', callId: 'c1', runId: 'r' }] },
  ]);
  assert.equal(only(s, 'tool')[0].status, 'failed');
  assert.match(only(s, 'tool')[0].reason ?? '', /Plan mode/);
  // A server that numbers the calls its own way: the run and the tool still find the card.
  const numbered = updates([
    { runId: 'r', kind: 'toolCall', toolCallId: 'call_0', tool: 'read_file', arguments: '{}' },
    { runId: 'r', kind: 'toolCall', toolCallId: 'call_1', tool: 'bash', arguments: '{"command": "sleep 60"}' },
    { kind: 'cancelledCalls', calls: [{ tool: 'bash', callId: 7, runId: 'r' }], reason: 'the session switched to plan mode' },
  ]);
  assert.deepEqual(only(numbered, 'tool').map((t) => t.status), ['running', 'failed']);
});

test('busy: this window\'s prompt or a run the server reports', () => {
  assert.equal(isBusy(initialChatState()), false);
  assert.equal(isBusy(reduce(initialChatState(), { type: 'state', state: { ...session, running: true } })), true);
  assert.equal(isBusy(reduce(initialChatState(), { type: 'userPrompt', text: 'x' })), true);
});

test('start-up progress is clamped and cleared once the server runs', () => {
  let s = reduce(initialChatState(), { type: 'startup', step: 'install', detail: 'Collecting pygls', progress: 1.7 });
  assert.deepEqual(s.startup, { step: 'install', detail: 'Collecting pygls', progress: 1 });
  s = reduce(s, { type: 'serverStatus', status: 'running' });
  assert.equal(s.startup, null);
});

test('parseArguments accepts JSON text and objects, nothing else', () => {
  assert.deepEqual(parseArguments('{"path": "a"}'), { path: 'a' });
  assert.deepEqual(parseArguments({ path: 'a' }), { path: 'a' });
  assert.equal(parseArguments('{"path": '), null);
  assert.equal(parseArguments('[1]'), null);
  assert.equal(parseArguments(3), null);
});

test('unknown kinds leave the state unchanged; items are capped; snapshots replace', () => {
  const empty = initialChatState();
  assert.equal(applyUpdate(empty, { kind: 'somethingNew' }), empty);
  let s = empty;
  for (let i = 0; i < MAX_ITEMS + 10; i++) s = reduce(s, { type: 'userPrompt', text: String(i) });
  assert.equal(s.items.length, MAX_ITEMS);
  assert.equal((s.items[s.items.length - 1] as { text: string }).text, String(MAX_ITEMS + 9));
  assert.equal(reduce(initialChatState(), { type: 'snapshot', state: s }), s);
});

test('the reducer never mutates its input', () => {
  const s = updates([{ runId: 'r', kind: 'text', delta: 'a' }]);
  const frozen = JSON.stringify(s);
  reduce(s, { type: 'update', update: { runId: 'r', kind: 'text', delta: 'b' } });
  reduce(s, { type: 'history', updates: [{ runId: 'x', kind: 'prompt', text: 'y' }] });
  assert.equal(JSON.stringify(s), frozen);
});

test('deviation and plan_submitted notices', () => {
  let s = run([{ type: 'userPrompt', text: 'x' }]);
  s = applyUpdate(s, { runId: 'r', kind: 'done', stopReason: 'plan_submitted' });
  assert.match(only(s, 'notice').at(-1)?.text ?? '', /Plan submitted/);
  s = applyUpdate(s, { runId: 'r', kind: 'deviation', path: 'b.py', message: 'b.py was changed but the approved plan never mentions it' });
  assert.equal(only(s, 'notice').at(-1)?.level, 'error');
});

test('the plan panel follows the session: the next round shows "drafting PLAN-2.md" at once, never the old status', () => {
  const plan1 = 'file:///w/.plan-lsp/plans/PLAN.md';
  const plan2 = 'file:///w/.plan-lsp/plans/PLAN-2.md';
  const approved: SessionState = { ...session, planUri: plan1, planStatus: 'approved', todos: [{ content: 'old step', status: 'completed' }] };
  let s = reduce(initialChatState(), { type: 'state', state: approved });
  assert.deepEqual(planPanel(s), { uri: plan1, status: 'approved', decisions: [] });
  assert.deepEqual(visibleTodos(s), approved.todos, "after the Do run its list shows");
  // The next prompt: the server says a draft began in PLAN-2.md before its state does.
  s = run([{ type: 'userPrompt', text: 'next' }, { type: 'update', update: { runId: 'r2', kind: 'planDraft', uri: plan2, chars: 0 } }], s);
  assert.deepEqual(planPanel(s), { uri: plan2, status: 'drafting', decisions: [] });
  assert.deepEqual(visibleTodos(s), [], 'the previous plan\'s list is gone while the next plan is written');
  // The server's state catches up: the same panel, then the decisions once submitted.
  s = reduce(s, { type: 'state', state: { ...approved, planUri: plan2, planStatus: 'drafting', running: true, runId: 'r2' } });
  assert.deepEqual(planPanel(s), { uri: plan2, status: 'drafting', decisions: [] });
  s = reduce(s, { type: 'state', state: { ...approved, planUri: plan2, planStatus: 'submitted' } });
  s = reduce(s, { type: 'promptEnded', stopReason: 'end_turn' });
  assert.deepEqual(planPanel(s)?.decisions.map((d) => d.label), ['Approve', 'Reject…']);
  assert.deepEqual(visibleTodos(s), [], 'a submitted plan shows no todos of the last run');
  // Approved: the Do run's own list shows.
  const doing = [{ content: 'new step', status: 'in_progress' as const }];
  s = reduce(s, { type: 'state', state: { ...approved, planUri: plan2, planStatus: 'approved', mode: 'build', todos: doing } });
  assert.deepEqual(visibleTodos(s), doing);
  // No plan at all: no panel.
  assert.equal(planPanel(reduce(initialChatState(), { type: 'state', state: session })), null);
});

test('a draft of a finished run no longer counts as live', () => {
  const plan1 = 'file:///w/PLAN.md';
  let s = reduce(initialChatState(), { type: 'state', state: { ...session, planUri: plan1, planStatus: 'rejected' } });
  s = applyUpdate(s, { runId: 'r1', kind: 'planDraft', uri: 'file:///w/PLAN-9.md', chars: 3 });
  // Not busy: the server's status is what shows, with its decisions.
  assert.deepEqual(planPanel(s)?.status, 'rejected');
  assert.deepEqual(planPanel(s)?.decisions.map((d) => d.label), ['Approve', 'Revise…']);
});

test('Send waits for a running server, an idle session and a model that is set up', () => {
  const provider = { configured: true, name: 'openai', model: 'm', baseUrl: '', problem: null };
  const ready = reduce({ ...initialChatState(), serverStatus: 'running' }, { type: 'state', state: { ...session, provider } as SessionState });
  assert.equal(canSend(ready), true);
  assert.equal(canSend(reduce(ready, { type: 'state', state: { ...session, provider: { ...provider, configured: false } } as SessionState })), false);
  assert.equal(canSend(reduce(ready, { type: 'userPrompt', text: 'go' })), false);
  assert.equal(canSend({ ...ready, serverStatus: 'starting' }), false);
  assert.equal(canSend(initialChatState()), false, 'no session yet');
});

test("a run's todo_write calls update one card in place; another run gets its own", () => {
  const list = (a: string, b: string) => JSON.stringify({ todos: [{ content: 'one', status: a }, { content: 'two', status: b }] });
  const s = updates([
    ...call('r1', 'c1', 'todo_write', JSON.parse(list('in_progress', 'pending')), '[~] one\n[ ] two'),
    ...call('r1', 'c2', 'edit_file', { path: 'a.py' }, 'ok'),
    ...call('r1', 'c3', 'todo_write', JSON.parse(list('completed', 'in_progress')), '[x] one\n[~] two'),
    { runId: 'r1', kind: 'toolCall', toolCallId: 'c4', tool: 'todo_write', arguments: list('completed', 'completed') },
  ]);
  const cards = only(s, 'tool').filter((t) => t.name === 'todo_write');
  assert.equal(cards.length, 1);
  assert.equal(cards[0].callId, 'c4');
  assert.equal(cards[0].status, 'running');
  assert.equal(cards[0].result, undefined, 'the previous result does not show on the new list');
  assert.equal(s.items.findIndex((i) => i.type === 'tool' && i.name === 'todo_write'), 0, 'the card stays where the list began');
  const done = applyUpdate(s, { runId: 'r1', kind: 'toolResult', toolCallId: 'c4', tool: 'todo_write', isError: false, content: '[x] one\n[x] two' });
  assert.equal(only(done, 'tool').find((t) => t.name === 'todo_write')?.result, '[x] one\n[x] two');
  const next = updates(call('r2', 'c1', 'todo_write', JSON.parse(list('pending', 'pending')), '[ ] one\n[ ] two'), done);
  assert.equal(only(next, 'tool').filter((t) => t.name === 'todo_write').length, 2);
});
