import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isWelcomeTab, welcomeTabs } from '../walkthrough';

test("the Welcome page's tabs are closed before the walkthrough opens, whatever it shows", () => {
  const tabs = [
    { label: 'Walkthrough: Setup VS Code Web', input: undefined },
    { label: 'Welcome', input: undefined },
    { label: 'hello.py', input: { uri: 'file:///ws/hello.py' } },
    { label: 'Settings', input: undefined },
  ];
  assert.deepEqual(welcomeTabs(tabs).map((t) => t.label), ['Walkthrough: Setup VS Code Web', 'Welcome']);
});

test('a file named like the Welcome page is not closed', () => {
  assert.equal(isWelcomeTab({ label: 'Welcome', input: { uri: 'file:///ws/Welcome' } }), false);
  assert.equal(isWelcomeTab({ label: 'Walkthrough: notes.md', input: { uri: 'file:///ws/notes.md' } }), false);
  assert.equal(isWelcomeTab({ label: 'Welcome', input: undefined }), true);
});

test('no Welcome page open: nothing to close', () => {
  assert.deepEqual(welcomeTabs([{ label: 'PLAN.md', input: { uri: 'file:///ws/PLAN.md' } }]), []);
  assert.deepEqual(welcomeTabs([]), []);
});
