import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { ResponseError, StreamMessageReader, StreamMessageWriter, createMessageConnection } from 'vscode-jsonrpc/node';
import { Methods, PlanLspSession, PlanLspUpdate, SessionState, SessionUi } from '../protocol';
import { statusBarText, statusBarTooltip } from '../statusText';
import { ChatItem, initialChatState, reduce } from '../webview/chatState';
import {
  compactionTitle, contextFill, contextText, formatCost, formatTokens, isUsage, statusBarFill, usageLine, usageTooltipLines,
} from '../webview/usage';
import type { SessionUsage } from '../wireTypes';

const usage = (fields: Partial<SessionUsage> = {}): SessionUsage => ({
  contextTokens: 7400, contextWindow: 32000, inputTokens: 12300, outputTokens: 1100, cachedInputTokens: 0,
  costUsd: null, compactions: 0, ...fields,
});

const state = (fields: Partial<SessionState> = {}): SessionState => ({
  sessionId: 's', mode: 'plan', permissionMode: 'ask', planUri: null, planStatus: 'none', outcome: 'never_planned',
  todos: [], running: false, ...fields,
});

test('token counts read in a few characters', () => {
  const cases: [number, string][] = [
    [0, '0'], [950, '950'], [999, '999'], [1000, '1k'], [7400, '7.4k'], [7449, '7.4k'], [9800, '9.8k'],
    [12_345, '12.3k'], [32_000, '32k'], [41_200, '41.2k'], [99_960, '100k'], [128_000, '128k'],
    [999_950, '1M'], [1_000_000, '1M'], [1_250_000, '1.3M'], [-5, '0'], [Number.NaN, '0'],
  ];
  for (const [n, text] of cases) assert.equal(formatTokens(n), text, `${n}`);
});

test('costs in dollars, cents and what matters below a cent', () => {
  assert.equal(formatCost(0.04), '$0.04');
  assert.equal(formatCost(1.254), '$1.25');
  assert.equal(formatCost(0.0031), '$0.0031');
  assert.equal(formatCost(0.005), '$0.005');
  assert.equal(formatCost(0), '$0');
});

test('context fill: a percent of the window, a warning above 80%', () => {
  assert.deepEqual(contextFill(usage()), { percent: 23, warning: false });
  assert.deepEqual(contextFill(usage({ contextTokens: 25_600 })), { percent: 80, warning: false });
  assert.deepEqual(contextFill(usage({ contextTokens: 25_700 })), { percent: 80, warning: true });
  assert.deepEqual(contextFill(usage({ contextTokens: 40_000 })), { percent: 125, warning: true });
  assert.deepEqual(contextFill(usage({ contextWindow: 0 })), { percent: null, warning: false });
  assert.equal(contextText(usage({ contextWindow: 0 })), 'Context 7.4k tokens');
});

test('the chat header line: fill, session tokens, the cost only when priced, compactions once there was one', () => {
  assert.equal(usageLine(usage()), 'Context 23% (7.4k / 32k) · 12.3k in / 1.1k out');
  assert.equal(usageLine(usage({ costUsd: 0.0412 })), 'Context 23% (7.4k / 32k) · 12.3k in / 1.1k out · $0.04');
  assert.equal(usageLine(usage({ costUsd: 0 })), 'Context 23% (7.4k / 32k) · 12.3k in / 1.1k out · $0');
  assert.equal(usageLine(usage({ compactions: 1 })), 'Context 23% (7.4k / 32k) · 12.3k in / 1.1k out · 1 compaction');
  assert.equal(usageLine(usage({ compactions: 2 })).endsWith(' · 2 compactions'), true);
  assert.equal(usageLine(usage({ contextTokens: 0, inputTokens: 0, outputTokens: 0 })), 'Context 0% (0 / 32k) · 0 in / 0 out');
});

test('the status bar: usage in the tooltip; in the text only when the context is nearly full', () => {
  const normal = state({ usage: usage() });
  assert.equal(statusBarText(normal), '$(eye) Plan · Ask before edits');
  const full = state({ usage: usage({ contextTokens: 28_000 }) });
  assert.equal(statusBarText(full), '$(eye) Plan · Ask before edits · $(warning) ctx 88%');
  assert.equal(statusBarFill(undefined), '');
  const tooltip = statusBarTooltip(state({ usage: usage({ cachedInputTokens: 4000, costUsd: 0.04, compactions: 1 }) }));
  assert.match(tooltip, /^Context: 23% of 32k tokens \(7\.4k\)$/m);
  assert.match(tooltip, /^Session tokens: 12\.3k in \(4k cached\) \/ 1\.1k out$/m);
  assert.match(tooltip, /^Cost: \$0\.04$/m);
  assert.match(tooltip, /^Compacted: 1 compaction$/m);
  // What the next request uses, and the key that toggles the mode (not Tab: that moves the focus).
  assert.match(tooltip, /^The next request runs in: Plan · Ask before edits$/m);
  assert.ok(tooltip.endsWith('Click, or Alt+M in the chat, to toggle Plan/Build'));
  assert.match(statusBarTooltip(state({ mode: 'build', permissionMode: 'auto_edit', running: true })), /^This run uses: Build · Auto-accept edits$/m);
  assert.match(usageTooltipLines(usage({ contextTokens: 30_000 }))[0], /nearly full: Compact frees it/);
  // A server without usage: nothing about it.
  assert.doesNotMatch(statusBarTooltip(state()), /Context|tokens/);
});

test('the usage shape is checked before it is shown', () => {
  assert.equal(isUsage(usage()), true);
  assert.equal(isUsage(undefined), false);
  assert.equal(isUsage({ contextTokens: '5' }), false);
});

test('a compaction update becomes a card with its numbers and summary, live and from history', () => {
  const update: PlanLspUpdate = {
    runId: null, kind: 'compaction', trigger: 'manual', summary: '## Summary\n- read `hello.py`',
    prunedOutputs: 3, tokensBefore: 41_200, tokensAfter: 9800,
  };
  const live = reduce(initialChatState(), { type: 'update', update });
  const card = live.items.at(-1) as Extract<ChatItem, { type: 'compaction' }>;
  assert.equal(card.type, 'compaction');
  assert.equal(card.trigger, 'manual');
  assert.equal(card.summary, '## Summary\n- read `hello.py`');
  assert.equal(compactionTitle(card), 'Conversation compacted (manual): 3 tool outputs pruned, 41.2k → 9.8k tokens');
  assert.equal(
    compactionTitle({ trigger: 'auto', prunedOutputs: 1, tokensBefore: 30_000, tokensAfter: 900 }),
    'Conversation compacted (auto): 1 tool output pruned, 30k → 900 tokens',
  );
  const restored = reduce(initialChatState(), { type: 'history', updates: [{ runId: 'r', kind: 'prompt', text: 'hi' }, update] });
  assert.deepEqual(restored.items.map((i) => i.type), ['user', 'compaction']);
  // Fields of the wrong type do not break the card.
  const odd = reduce(initialChatState(), { type: 'update', update: { kind: 'compaction', trigger: 'x', prunedOutputs: 'many' } });
  const oddCard = odd.items[0] as Extract<ChatItem, { type: 'compaction' }>;
  assert.deepEqual([oddCard.trigger, oddCard.prunedOutputs, oddCard.summary], ['manual', 0, '']);
});

function pair() {
  const a = new PassThrough();
  const b = new PassThrough();
  const client = createMessageConnection(new StreamMessageReader(a), new StreamMessageWriter(b));
  const server = createMessageConnection(new StreamMessageReader(b), new StreamMessageWriter(a));
  return { client, server, close: () => (client.dispose(), server.dispose()) };
}

test('planLsp/compact names the workspace and renders the state it answers; a refusal rejects with its message', async () => {
  const { client, server, close } = pair();
  const states: SessionState[] = [];
  const ui: SessionUi = {
    onUpdate: () => undefined,
    onState: (s) => states.push(s),
    askPermission: async () => ({ optionId: 'reject_once' }),
    askUser: async () => ({ answers: {} }),
  };
  const seen: unknown[] = [];
  let running = false;
  server.onRequest(Methods.compact, (params) => {
    seen.push(params);
    if (running) throw new ResponseError(-32803, 'a run is in progress: wait for it to end or cancel it');
    return state({ usage: usage({ compactions: 1, contextTokens: 900 }) });
  });
  const session = new PlanLspSession(client, ui, 'file:///w');
  server.listen();
  client.listen();
  try {
    const after = await session.compact();
    assert.equal(after.usage?.compactions, 1);
    assert.equal(session.current?.usage?.contextTokens, 900);
    assert.deepEqual(seen, [{ workspaceUri: 'file:///w' }]);
    running = true;
    await assert.rejects(session.compact(), /a run is in progress/);
    assert.equal(states.length, 1, 'a refusal changes no state');
  } finally {
    close();
  }
});
