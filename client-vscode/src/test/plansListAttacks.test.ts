import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { PlanInfo } from '../protocol.generated';
import { planPicks, withoutIcons } from '../plansList';

// A plan's title is the model's first heading, and a plan file's name is the model's too:
// neither may draw VS Code's icons in the Show Plans quick pick (a check mark, a status).

const PLANS = '/ws/.plan-lsp/plans';

function plan(name: string, title: string, current = false): PlanInfo {
  return {
    uri: `file://${PLANS}/${encodeURIComponent(name)}`,
    title,
    status: 'submitted',
    sessionId: 's1',
    revisions: 1,
    approvedAt: null,
    updatedAt: '2026-12-02T06:10:42+00:00',
    current,
  };
}

const ICON = /(^|[^\\])\$\([A-Za-z0-9-]+(~[A-Za-z]+)?\)/;

test('a hostile title or file name draws no icon in the quick pick', () => {
  const picks = planPicks([
    plan('$(check) approved.md', '$(pass-filled) approved and carried out · $(arrow-right)'),
    plan('PLAN-2.md', 'Plan two', true),
  ]);
  const [current, hostile] = picks;
  assert.equal(current.label, '$(arrow-right) PLAN-2.md'); // the server's own icon stays
  assert.equal(hostile.label, '\\$(check) approved.md');
  assert.equal(hostile.detail, '\\$(pass-filled) approved and carried out · \\$(arrow-right) — 1 revision');
  for (const pick of [hostile]) {
    assert.doesNotMatch(pick.label, ICON);
    assert.doesNotMatch(pick.detail, ICON);
  }
});

test('withoutIcons leaves other text alone', () => {
  assert.equal(withoutIcons('Plan (two) costs $5'), 'Plan (two) costs $5');
  assert.equal(withoutIcons('$($('), '\\$(\\$(');
});
