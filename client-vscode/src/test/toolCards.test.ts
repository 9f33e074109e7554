import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { initialChatState, reduce, ToolItem } from '../webview/chatState';
import { argumentsHtml, checklistHtml, todoChecklist } from '../webview/toolCards';

const todos = [
  { content: 'Add the flag', status: 'completed' },
  { content: 'Wire it <in>', status: 'in_progress' },
  { content: 'Test it', status: 'pending' },
];

function todoCard(result?: { content: string; isError?: boolean }): ToolItem {
  let s = reduce(initialChatState(), {
    type: 'update', update: { kind: 'toolCall', runId: 'r1', toolCallId: 'c1', tool: 'todo_write', arguments: JSON.stringify({ todos }) },
  });
  if (result) {
    s = reduce(s, { type: 'update', update: { kind: 'toolResult', runId: 'r1', toolCallId: 'c1', tool: 'todo_write', isError: result.isError ?? false, content: result.content } });
  }
  return s.items[0] as ToolItem;
}

test("a todo_write card is the checklist with PLAN.md's marks, never the call's JSON", () => {
  const html = checklistHtml(todoChecklist(todoCard()) ?? assert.fail('no checklist'));
  assert.ok(html.includes('<span class="task task-completed">[x]</span> Add the flag'), html);
  assert.ok(html.includes('<span class="task task-in_progress">[~]</span> Wire it &lt;in&gt;'), html);
  assert.ok(html.includes('<span class="task task-pending">[ ]</span> Test it'), html);
  assert.ok(!html.includes('{') && !html.includes('"status"'), html);
  assert.ok(html.includes('data-kept="false"'));
});

test('after the call the card shows the list the server kept, with its notes', () => {
  // The ledger did not mark step 1 done: its edit was denied.
  const kept = '[ ] Add the flag\n[~] Wire it <in>\n[ ] Test it\nstep 1 not marked done: its change to a.py was denied';
  const list = todoChecklist(todoCard({ content: kept })) ?? assert.fail('no checklist');
  assert.equal(list.kept, true);
  assert.deepEqual(list.items.map((i) => i.status), ['pending', 'in_progress', 'pending']);
  assert.deepEqual(list.notes, ['step 1 not marked done: its change to a.py was denied']);
  const html = checklistHtml(list);
  assert.ok(html.includes('<span class="task task-pending">[ ]</span> Add the flag'), html);
  assert.ok(html.includes('data-testid="todo-note"'), html);
  // An empty list says so.
  assert.ok(checklistHtml(todoChecklist(todoCard({ content: '(the todo list is empty)' })) ?? assert.fail('none')).includes('The todo list is empty.'));
});

test('a refused todo_write keeps the requested list (its error shows as the result)', () => {
  const list = todoChecklist(todoCard({ content: 'invalid_todos: two items in progress', isError: true }));
  assert.equal(list?.kept, false);
  assert.equal(list?.items.length, 3);
  assert.equal(todoChecklist({ ...todoCard(), name: 'bash' }), null);
});

test('the plan card is not a scroll box inside the scrolling chat', () => {
  const css = readFileSync(join(__dirname, '..', '..', 'media', 'chat.css'), 'utf8');
  const rule = /\.plan-preview\s*\{([^}]*)\}/.exec(css)?.[1] ?? assert.fail('no .plan-preview rule');
  assert.doesNotMatch(rule, /max-height|overflow/);
});

test('other calls show their arguments as fields, none for {} and never as JSON text', () => {
  assert.equal(argumentsHtml({ args: '{}', input: {} }), '');
  const html = argumentsHtml({ args: '{"pattern":"<x>","limit":3}', input: { pattern: '<x>', limit: 3 } });
  assert.ok(html.includes('<span class="key">pattern:</span> &lt;x&gt;') && html.includes('<span class="key">limit:</span> 3'), html);
  assert.ok(!html.includes('{'), html);
  assert.ok(argumentsHtml({ args: 'x'.repeat(10), input: { v: 'y'.repeat(5000) } }).includes('…'));
  assert.equal(argumentsHtml({ args: 'not json', input: null }), '<pre class="tool-args">not json</pre>');
});
