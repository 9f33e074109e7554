import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { PlanInfo } from '../protocol.generated';
import { awaitsDecision, planFileName, planName, planPicks, showPlans, shortDate, statusInWords, type PlanPick } from '../plansList';
import { applyUpdate, initialChatState } from '../webview/chatState';

const PLANS = '/ws/.plan-lsp/plans';

function plan(name: string, status: PlanInfo['status'], extra: Partial<PlanInfo> = {}): PlanInfo {
  return {
    uri: `file://${PLANS}/${name}`,
    title: `Title of ${name}`,
    status,
    sessionId: 's1',
    revisions: 1,
    approvedAt: null,
    updatedAt: '2026-12-02T06:10:42+00:00',
    current: false,
    ...extra,
  };
}

const FIRST = plan('PLAN.md', 'done', { approvedAt: '2026-12-01T17:03:09+00:00' });
const SECOND = plan('PLAN-2.md', 'submitted', { revisions: 2, current: true });

test('each plan is listed newest first with its file, status in words, date and title', () => {
  const picks = planPicks([FIRST, SECOND]);
  assert.deepEqual(picks.map((p) => p.label), ['$(arrow-right) PLAN-2.md', 'PLAN.md']);
  assert.deepEqual(picks.map((p) => p.description), [
    'waiting for your decision · 2026-12-02 06:10',
    'approved and carried out · 2026-12-01 17:03',
  ]);
  assert.deepEqual(picks.map((p) => p.detail), [
    'Title of PLAN-2.md — 2 revisions · the current plan',
    'Title of PLAN.md — 1 revision',
  ]);
  assert.deepEqual(picks.map((p) => p.uri), [SECOND.uri, FIRST.uri]);
});

test('a plan carried out partly says which steps are open, not "approved"', () => {
  const partly = 'carried out partly: steps 2 and 4 open (2 denied: src/app.py; 4 not reached)';
  const picks = planPicks([plan('PLAN.md', 'approved', { carriedOut: partly })]);
  assert.equal(picks[0].description, `approved, ${partly} · 2026-12-02 06:10`);
});

test('every status has words of its own', () => {
  const statuses: PlanInfo['status'][] = ['drafting', 'submitted', 'rejected', 'approved', 'done'];
  const words = statuses.map(statusInWords);
  assert.equal(new Set(words).size, statuses.length);
  assert.ok(words.every((w, i) => w !== statuses[i] || w === 'rejected'));
});

test('file names and dates read as the user expects', () => {
  assert.equal(planFileName('file:///ws/.plan-lsp/plans/sub/My%20Plan.md'), 'My Plan.md');
  assert.equal(planFileName('file:///ws/bad%E0.md'), 'bad%E0.md');
  assert.equal(shortDate('2026-12-02T06:10:42+00:00'), '2026-12-02 06:10');
  assert.equal(shortDate('yesterday'), 'yesterday');
});

test('choosing a plan opens it; dismissing the pick opens nothing', async () => {
  const opened: string[] = [];
  let offered: PlanPick[] = [];
  const ui = (choose: (items: PlanPick[]) => PlanPick | undefined) => ({
    pick: async (items: PlanPick[]) => {
      offered = items;
      return choose(items);
    },
    open: async (uri: string) => void opened.push(uri),
    info: () => assert.fail('no message expected'),
  });
  const chosen = await showPlans(async () => ({ plans: [FIRST, SECOND] }), ui((items) => items[1]));
  assert.equal(chosen?.uri, FIRST.uri);
  assert.equal(offered.length, 2);
  assert.deepEqual(opened, [FIRST.uri]);
  await showPlans(async () => ({ plans: [FIRST, SECOND] }), ui(() => undefined));
  assert.deepEqual(opened, [FIRST.uri]);
});

test('with no plans yet the user is told where plans come from', async () => {
  const messages: string[] = [];
  const chosen = await showPlans(async () => ({ plans: [] }), {
    pick: async () => assert.fail('nothing to pick'),
    open: async () => assert.fail('nothing to open'),
    info: (m) => void messages.push(m),
  });
  assert.equal(chosen, undefined);
  assert.match(messages[0] ?? '', /no plans yet/);
});

test("the chat's submitted notice names the file the run's draft went to", () => {
  let s = initialChatState();
  s = applyUpdate(s, { runId: 'r2', kind: 'planDraft', uri: `file://${PLANS}/PLAN-2.md`, status: 'drafting', chars: 0 });
  s = applyUpdate(s, { runId: 'r2', kind: 'done', stopReason: 'plan_submitted' });
  const notices = s.items.filter((i) => i.type === 'notice').map((i) => (i.type === 'notice' ? i.text : ''));
  assert.equal(notices.at(-1), 'Plan submitted: review PLAN-2.md, then Approve or Reject.');
  const draft = s.items.find((i) => i.type === 'planDraft');
  assert.equal(draft?.type === 'planDraft' ? planFileName(draft.uri ?? '') : '', 'PLAN-2.md');
});

test("the palette's Approve and Reject are offered only while a plan waits for a decision, and Approve names it", () => {
  assert.equal(awaitsDecision('submitted', false), true);
  assert.equal(awaitsDecision('submitted', true), true);
  assert.equal(awaitsDecision('rejected', false), true);
  assert.equal(awaitsDecision('rejected', true), false, 'a revision is being written');
  assert.equal(awaitsDecision('drafting', true), false);
  assert.equal(awaitsDecision('drafting', false), true, 'an interrupted draft can still be decided');
  for (const status of ['none', 'approved']) assert.equal(awaitsDecision(status, false), false, status);
  const uri = `file://${PLANS}/PLAN-2.md`;
  assert.equal(planName(uri, 'intro\n\n# Plan: say goodbye ##\n\n## Steps\n'), 'PLAN-2.md, "Plan: say goodbye"');
  assert.equal(planName(uri, 'no heading'), 'PLAN-2.md');
  assert.equal(planName(uri, `# ${'x'.repeat(100)}`), `PLAN-2.md, "${'x'.repeat(79)}…"`);
});
