import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { StreamMessageReader, StreamMessageWriter, createMessageConnection } from 'vscode-jsonrpc/node';
import { CheckpointTimeline, TimelineSession } from '../checkpointTimeline';
import { Methods, PlanLspSession, PlanLspUpdate } from '../protocol';
import type { CheckpointInfo, CheckpointsResult } from '../protocol.generated';
import { ChatEvent, ChatState, initialChatState, reduce } from '../webview/chatState';
import { TimelineItem, clock, outcomeLines, timelineHtml, timelineSteps } from '../webview/timeline';

const WS = 'file:///w';
const PLAN_PATH = '/w/.plan-lsp/plans/PLAN.md';

function info(id: string, step: number | null, kind: CheckpointInfo['kind'], extra: Partial<CheckpointInfo> = {}): CheckpointInfo {
  const label = kind === 'step' ? `before step ${step}` : kind === 'tool' ? 'before edit_file' : 'after edit_file';
  return { id, step, stepText: step === 1 ? 'Change the greeting' : step === 2 ? 'Say goodbye' : null, kind, label, at: '2025-01-02T03:04:05+00:00', files: [], ...extra };
}

function recorded(runId: string, cp: CheckpointInfo): PlanLspUpdate {
  return { kind: 'checkpoint', runId, workspaceUri: WS, action: 'recorded', checkpoint: cp, message: `checkpoint ${cp.id}` };
}

/** The Do run of a two-step plan: a step checkpoint, then its calls' own. The provider
 * numbers calls from zero in each request: every call's id is `c0`. */
const RUN: PlanLspUpdate[] = [
  recorded('r1', info('t-1', 1, 'step')),
  recorded('r1', info('t-2', 1, 'tool', { toolCallId: 'c0' })),
  recorded('r1', info('t-4', 1, 'tool', { toolCallId: 'c0', label: 'before bash' })),
  recorded('r1', info('t-6', 2, 'step')),
  recorded('r1', info('t-7', 2, 'tool', { toolCallId: 'c0' })),
];

/** What `planLsp/checkpoints` answers for RUN: the after-checkpoints carry the files. */
const LIST: CheckpointsResult = {
  canRedo: false,
  checkpoints: [
    info('t-1', 1, 'step'),
    info('t-2', 1, 'tool', { toolCallId: 'c0' }),
    info('t-3', 1, 'after', { toolCallId: 'c0', files: [{ path: 'hello.py', status: 'modified', added: 1, removed: 1 }] }),
    info('t-4', 1, 'tool', { toolCallId: 'c0' }),
    info('t-5', 1, 'after', { toolCallId: 'c0', files: [
      { path: 'hello.py', status: 'modified', added: 2, removed: 0 },
      { path: '.plan-lsp/plans/PLAN.md', status: 'modified', added: 1, removed: 1 },
    ] }),
    info('t-6', 2, 'step'),
    info('t-7', 2, 'tool', { toolCallId: 'c0' }),
    info('t-8', 2, 'after', { toolCallId: 'c0', files: [{ path: 'README.md', status: 'added', added: 3, removed: 0 }] }),
  ],
};

function run(events: ChatEvent[], state: ChatState = initialChatState()): ChatState {
  return events.reduce(reduce, state);
}

const updates = (list: PlanLspUpdate[]): ChatEvent[] => list.map((update) => ({ type: 'update', update }));

function cards(state: ChatState): TimelineItem[] {
  return state.items.filter((i): i is TimelineItem => i.type === 'checkpoints');
}

function reverted(checkpointId: string, extra: Record<string, unknown> = {}): PlanLspUpdate {
  return {
    kind: 'checkpoint', runId: null, workspaceUri: WS, action: 'reverted', message: `reverted the workspace to checkpoint ${checkpointId}`,
    result: { checkpointId, restored: ['hello.py', 'README.md'], merged: [], kept: [], notRestorable: [], stepsReverted: [1, 2], ...extra },
  };
}

test("a run's checkpoints are one card, updated in place; another run gets its own", () => {
  let s = run(updates([{ kind: 'text', runId: 'r1', delta: 'Working.' }, ...RUN, RUN[0]]));
  assert.equal(cards(s).length, 1);
  assert.deepEqual(cards(s)[0].entries.map((e) => [e.id, e.kind, e.step, e.tool]), [
    ['t-1', 'step', 1, null], ['t-2', 'tool', 1, 'edit_file'], ['t-4', 'tool', 1, 'bash'], ['t-6', 'step', 2, null], ['t-7', 'tool', 2, 'edit_file'],
  ]);
  s = run(updates([recorded('r2', info('t-9', 2, 'step'))]), s);
  assert.deepEqual(cards(s).map((c) => [c.runId, c.entries.length]), [['r1', 5], ['r2', 1]]);
});

test('the checkpoint list gives each call its files and each step their sum, the plan left out', () => {
  const s = run([...updates(RUN), { type: 'checkpointList', result: LIST }]);
  const steps = timelineSteps(cards(s)[0], PLAN_PATH);
  assert.deepEqual(steps.map((x) => [x.step, x.checkpoint?.id, x.calls.map((c) => c.entry.id)]), [[1, 't-1', ['t-2', 't-4']], [2, 't-6', ['t-7']]]);
  // Each call its own files, though the provider gave every call the same id.
  assert.deepEqual(steps.flatMap((x) => x.calls.map((c) => c.files?.map((f) => f.path))), [
    ['hello.py'], ['hello.py', '.plan-lsp/plans/PLAN.md'], ['README.md'],
  ]);
  assert.deepEqual(steps[0].files, [{ path: 'hello.py', status: 'modified', added: 3, removed: 1 }]);
  assert.deepEqual(steps[1].files, [{ path: 'README.md', status: 'added', added: 3, removed: 0 }]);
  const html = timelineHtml(cards(s)[0], { busy: false, planPath: PLAN_PATH });
  assert.ok(html.includes('hello.py +3 −1') && html.includes('README.md new +3 −0'), html);
  assert.ok(html.includes('Change the greeting') && html.includes(clock('2025-01-02T03:04:05+00:00')), html);
  // Per step a real button, reachable with Tab, naming the checkpoint before the step.
  const buttons = [...html.matchAll(/<button [^>]*data-testid="checkpoint-revert"[^>]*>([^<]*)<\/button>/g)];
  assert.deepEqual(buttons.map((b) => [/data-checkpoint="([^"]+)"/.exec(b[0])?.[1], b[1]]), [['t-1', 'Revert to here'], ['t-6', 'Revert to here']]);
  assert.ok(buttons.every((b) => !b[0].includes('disabled')), html);
  assert.ok(!html.includes('checkpoint-redo'), 'Redo before any revert');
  // While a run goes the server refuses reverts: the buttons say so.
  const busy = timelineHtml(cards(s)[0], { busy: true, planPath: PLAN_PATH });
  assert.equal([...busy.matchAll(/data-testid="checkpoint-revert"[^>]* disabled/g)].length, 2, busy);
});

test('a revert lands on the card of its checkpoint and says what it restored, kept and could not restore', () => {
  const kept = [{ path: 'notes.txt', why: 'you changed it after the run did' }];
  const lost = [{ path: 'big.bin', why: 'not recorded at that checkpoint: over the size cap' }];
  let s = run([...updates(RUN), ...updates([recorded('r2', info('u-1', 1, 'step'))])]);
  s = run(updates([reverted('t-1', { kept, notRestorable: lost })]), s);
  const [first, second] = cards(s);
  assert.equal(second.last, null);
  assert.deepEqual(first.reverted, [1, 2]);
  assert.equal(first.canRedo, true);
  assert.deepEqual(outcomeLines(first), [
    'Reverted to before step 1: steps 1 and 2 undone.',
    'Restored: hello.py, README.md.',
    'Kept as you have it: notes.txt (you changed it after the run did).',
    'Could not restore: big.bin (not recorded at that checkpoint: over the size cap).',
  ]);
  const html = timelineHtml(first, { busy: false, planPath: null });
  assert.ok(/<button [^>]*data-testid="checkpoint-redo"[^>]*>Redo<\/button>/.test(html), html);
  assert.equal((html.match(/data-testid="checkpoint-reverted"/g) ?? []).length, 2);
  // The host's list says whether a redo is still possible.
  s = reduce(s, { type: 'checkpointList', result: { ...LIST, canRedo: false } });
  assert.equal(cards(s)[0].canRedo, false);
  s = reduce(s, { type: 'checkpointList', result: { ...LIST, canRedo: true } });
  assert.deepEqual(cards(s).map((c) => c.canRedo), [true, false]);
});

test('a redo lands on the card of the last revert and brings its steps back', () => {
  let s = run(updates([...RUN, recorded('r2', info('u-1', 2, 'step')), reverted('t-6', { stepsReverted: [2], restored: ['README.md'] })]));
  s = run(updates([{
    kind: 'checkpoint', runId: null, workspaceUri: WS, action: 'redone', message: 'undid the last revert',
    result: { checkpointId: 'pre-9', restored: ['README.md'], merged: [], kept: [], notRestorable: [], stepsReverted: [2] },
  }]), s);
  const [first, second] = cards(s);
  assert.equal(second.last, null);
  assert.deepEqual(first.reverted, []);
  assert.equal(first.last?.action, 'redone');
  assert.equal(first.canRedo, false);
  assert.deepEqual(outcomeLines(first), ['Redone: the last revert is undone, step 2 back.', 'Restored: README.md.']);
});

test('a change the user refused, undone at once, is said on the card; a history brings the card back', () => {
  const denied: PlanLspUpdate = {
    kind: 'checkpoint', runId: 'r1', workspaceUri: WS, action: 'denied', result: null,
    message: 'bash changed notes.txt, which the user refused to let change in this step; the change was undone',
  };
  const live = run(updates([...RUN, denied, reverted('t-1')]));
  assert.ok(timelineHtml(cards(live)[0], { busy: false, planPath: null }).includes('Undone at once: bash changed notes.txt'));
  const again = reduce(initialChatState(), { type: 'history', updates: [...RUN, denied, reverted('t-1')] });
  assert.deepEqual(cards(again).map(({ id: _id, ...card }) => card), cards(live).map(({ id: _id, ...card }) => card));
});

/** A session whose answers the test holds back. */
class FakeSession implements TimelineSession {
  reads = 0;
  pending: (() => void)[] = [];
  reverts: string[] = [];
  redos = 0;
  refuse: string | null = null;
  checkpoints(): Promise<CheckpointsResult> {
    this.reads++;
    return new Promise((resolve) => this.pending.push(() => resolve(LIST)));
  }
  async revert(checkpointId: string): Promise<unknown> {
    if (this.refuse) throw new Error(this.refuse);
    this.reverts.push(checkpointId);
    return {};
  }
  async redo(): Promise<unknown> {
    this.redos++;
    return {};
  }
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

test('the host reads the checkpoints one at a time: once more for what came meanwhile, at the end of a run that recorded some', async () => {
  const session = new FakeSession();
  const events: ChatEvent[] = [];
  const timeline = new CheckpointTimeline(() => session, () => session, (e) => events.push(e), () => undefined);
  timeline.noteUpdate({ kind: 'text', runId: 'r1', delta: 'x' });
  assert.equal(session.reads, 0);
  timeline.noteUpdate(RUN[0]);
  timeline.noteUpdate(RUN[1]);
  timeline.noteUpdate(RUN[2]);
  assert.equal(session.reads, 1);
  session.pending.shift()?.();
  await tick();
  assert.equal(session.reads, 2, 'one more read for the updates that came during the first');
  session.pending.shift()?.();
  await tick();
  assert.equal(session.reads, 2);
  assert.deepEqual(events.map((e) => e.type), ['checkpointList', 'checkpointList']);
  timeline.noteUpdate({ kind: 'done', runId: 'r9', stopReason: 'end_turn' });
  assert.equal(session.reads, 2, 'a run that recorded no checkpoint');
  timeline.noteUpdate({ kind: 'done', runId: 'r1', stopReason: 'end_turn' });
  assert.equal(session.reads, 3, "the end of the run brings its last call's files");
  session.pending.shift()?.();
  await tick();
  timeline.noteHistory([{ kind: 'text', runId: 'r1', delta: 'x' }]);
  assert.equal(session.reads, 3);
  timeline.noteHistory(RUN);
  assert.equal(session.reads, 4);
});

test("Revert to here and Redo go to the session; the server's refusal is the caller's error", async () => {
  const session = new FakeSession();
  const timeline = new CheckpointTimeline(() => session, () => session, () => undefined, () => undefined);
  await timeline.revert('t-6');
  await timeline.redo();
  assert.deepEqual([session.reverts, session.redos], [['t-6'], 1]);
  await assert.rejects(timeline.revert(''), /no checkpoint/);
  session.refuse = 'a run (r3) is in progress: stop it first (planLsp/cancel), then revert';
  await assert.rejects(timeline.revert('t-1'), /in progress/);
});

test("the session reverts through the step lens's command, and asks planLsp/redo and planLsp/checkpoints for its folder", async () => {
  const a = new PassThrough();
  const b = new PassThrough();
  const client = createMessageConnection(new StreamMessageReader(a), new StreamMessageWriter(b));
  const server = createMessageConnection(new StreamMessageReader(b), new StreamMessageWriter(a));
  const calls: unknown[] = [];
  server.onRequest(Methods.executeCommand, (p) => {
    calls.push(p);
    return { checkpointId: 't-1', restored: [], merged: [], kept: [], notRestorable: [], stepsReverted: [] };
  });
  server.onRequest(Methods.redo, (p) => {
    calls.push(['redo', p]);
    return { checkpointId: 'x', restored: [], merged: [], kept: [], notRestorable: [], stepsReverted: [] };
  });
  server.onRequest(Methods.checkpoints, (p) => {
    calls.push(['checkpoints', p]);
    return LIST;
  });
  const session = new PlanLspSession(client, { onUpdate: () => undefined, onState: () => undefined, askPermission: async () => ({ optionId: 'reject_once' }), askUser: async () => ({ answers: {} }) }, WS);
  server.listen();
  client.listen();
  try {
    await session.revert('t-1');
    await session.redo();
    assert.equal((await session.checkpoints()).checkpoints.length, LIST.checkpoints.length);
    assert.deepEqual(calls, [
      { command: 'planLsp.revert', arguments: [{ workspaceUri: WS, checkpointId: 't-1' }] },
      ['redo', { workspaceUri: WS }],
      ['checkpoints', { workspaceUri: WS }],
    ]);
  } finally {
    client.dispose();
    server.dispose();
  }
});
