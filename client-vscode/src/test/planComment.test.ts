import { test } from 'node:test';
import assert from 'node:assert/strict';
import { actsOnSelection, asksForComment, commentArgs, commentBox, commentedLines } from '../planComment';

const PLAN = 'file:///ws/.plan-lsp/plans/PLAN.md';
const range = (a: number, ac: number, b: number, bc: number) => ({ start: { line: a, character: ac }, end: { line: b, character: bc } });

test('the code action (a range, no text) is asked for by the extension', () => {
  assert.equal(asksForComment('planLsp.commentOnPlan', [{ planUri: PLAN, range: range(3, 0, 5, 0) }]), true);
  assert.equal(asksForComment('planLsp.commentOnPlan', [{ planUri: PLAN, range: range(3, 0, 5, 0), text: '  ' }]), true);
  // A comment already given (another client, a test) goes to the server as it is.
  assert.equal(asksForComment('planLsp.commentOnPlan', [{ planUri: PLAN, range: range(3, 0, 5, 0), text: 'why?' }]), false);
  assert.equal(asksForComment('planLsp.commentOnPlan', [{ planUri: PLAN }]), false);
  assert.equal(asksForComment('planLsp.commentOnPlan', []), false);
  assert.equal(asksForComment('planLsp.rejectPlan', [{ range: range(3, 0, 5, 0) }]), false);
});

test('the box names the lines as the server counts them (1-based; a whole-line selection ends before the next line)', () => {
  assert.deepEqual(commentedLines(range(3, 0, 5, 0)), { first: 4, last: 5 });
  assert.deepEqual(commentedLines(range(3, 2, 5, 7)), { first: 4, last: 6 });
  assert.deepEqual(commentedLines(range(3, 4, 3, 4)), { first: 4, last: 4 }); // the cursor
  assert.deepEqual(commentedLines(range(3, 0, 4, 0)), { first: 4, last: 4 });
  assert.equal(commentBox(range(11, 0, 13, 0)).title, 'Comment on lines 12–13');
  assert.equal(commentBox(range(11, 5, 11, 5)).title, 'Comment on line 12');
  assert.match(commentBox(range(0, 0, 0, 0)).prompt, /Escape: cancel/);
});

test('what was typed is sent with the plan and range; Escape and an empty box send nothing', () => {
  const args = [{ planUri: PLAN, range: range(11, 0, 13, 0) }];
  assert.deepEqual(commentArgs(args, '  say which file  '), [{ planUri: PLAN, range: range(11, 0, 13, 0), text: 'say which file' }]);
  assert.equal(commentArgs(args, undefined), undefined);
  assert.equal(commentArgs(args, '   '), undefined);
  assert.equal(commentArgs([], 'text'), undefined);
});

test('only the comment acts on the selection (offered by Ctrl+.)', () => {
  assert.equal(actsOnSelection('planLsp.commentOnPlan'), true);
  assert.equal(actsOnSelection('planLsp.reviewPlan'), false);
  assert.equal(actsOnSelection('planLsp.approvePlan'), false);
  assert.equal(actsOnSelection(undefined), false);
});
