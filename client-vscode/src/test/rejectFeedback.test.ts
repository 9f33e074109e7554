import { test } from 'node:test';
import assert from 'node:assert/strict';
import { asksForFeedback, feedbackBox, rejectArgs } from '../rejectFeedback';
import { ChatState, initialChatState, planDecisions } from '../webview/chatState';
import type { PlanStatus, SessionState } from '../wireTypes';

test('Reject…: Escape cancels, empty rejects without feedback, text is the feedback', () => {
  assert.equal(rejectArgs(undefined, false), undefined);
  assert.deepEqual(rejectArgs('', false), {});
  assert.deepEqual(rejectArgs('   ', false), {});
  assert.deepEqual(rejectArgs('  smaller steps ', false), { feedback: 'smaller steps' });
});

test('Revise…: Escape and empty cancel; text is the feedback', () => {
  assert.equal(rejectArgs(undefined, true), undefined);
  assert.equal(rejectArgs('', true), undefined);
  assert.deepEqual(rejectArgs('one file only', true), { feedback: 'one file only' });
});

test('the box says what empty and Escape do', () => {
  assert.match(feedbackBox(false).prompt, /Empty: reject without feedback/);
  assert.match(feedbackBox(false).prompt, /Escape: cancel/);
  assert.equal(feedbackBox(true).title, 'Revise the plan');
});

test('the lens and code action Reject…/Revise… (confirm, no feedback) are asked by the extension', () => {
  assert.equal(asksForFeedback('planLsp.rejectPlan', [{ confirm: true }]), true);
  assert.equal(asksForFeedback('planLsp.rejectPlan', [{ confirm: true, feedback: 'x' }]), false);
  assert.equal(asksForFeedback('planLsp.rejectPlan', [{}]), false); // review notes in the plan
  assert.equal(asksForFeedback('planLsp.rejectPlan', []), false);
  assert.equal(asksForFeedback('planLsp.approvePlan', [{ confirm: true }]), false);
});

function chat(planStatus: PlanStatus, running = false): ChatState {
  const session: SessionState = {
    sessionId: 's', mode: 'plan', permissionMode: 'ask', planUri: null, planStatus,
    outcome: 'planning_with_plan', todos: [], running,
  };
  return { ...initialChatState(), session };
}

test('the chat offers a way forward from every plan status no run is writing', () => {
  const labels = (s: ChatState) => planDecisions(s).map((d) => `${d.action}:${d.label}`);
  assert.deepEqual(labels(chat('submitted')), ['approve:Approve', 'reject:Reject…']);
  assert.deepEqual(labels(chat('drafting')), ['approve:Approve', 'reject:Reject…']);
  assert.deepEqual(labels(chat('rejected')), ['approve:Approve', 'feedback:Revise…']);
  assert.deepEqual(labels(chat('drafting', true)), []); // a run is writing it
  assert.deepEqual(labels(chat('rejected', true)), []); // a run is revising it
  assert.deepEqual(labels(chat('none')), []);
  assert.deepEqual(labels(chat('approved')), []);
});
