import { test } from 'node:test';
import assert from 'node:assert/strict';
import { editPath, requestDiff, textBeforeCall } from '../proposal';

test('edit calls name their file; other calls do not', () => {
  assert.equal(editPath('write_file', { path: 'a.py', content: '' }), 'a.py');
  assert.equal(editPath('edit_file', { path: 'src/b.py' }), 'src/b.py');
  assert.equal(editPath('bash', { path: 'a.py' }), null);
  assert.equal(editPath('write_file', { content: 'x' }), null);
  assert.equal(editPath('write_file', null), null);
});

test("a request's diff is the server's before and after texts", () => {
  const uri = 'file:///ws/h.py';
  assert.deepEqual(requestDiff({ uri, before: 'a\r\nb', after: 'a\r\nc', truncated: false }), {
    ok: true,
    uri,
    before: 'a\r\nb',
    after: 'a\r\nc',
  });
  // A new file has no before-text.
  assert.deepEqual(requestDiff({ uri, before: null, after: 'x', truncated: false }), { ok: true, uri, before: null, after: 'x' });
});

test('no change, a truncated one or an incomplete one shows no diff', () => {
  const uri = 'file:///ws/h.py';
  for (const change of [undefined, null, 'x']) {
    assert.match(diffProblem(change), /no change/);
  }
  assert.match(diffProblem({ uri, before: null, after: null, truncated: true }), /too big/);
  assert.match(diffProblem({ uri, before: 'a', truncated: false }), /incomplete/);
  assert.match(diffProblem({ before: 'a', after: 'b', truncated: false }), /incomplete/);
  assert.match(diffProblem({ uri, before: 3, after: 'b', truncated: false }), /incomplete/);
});

function diffProblem(change: unknown): string {
  const diff = requestDiff(change);
  return diff.ok ? '' : diff.problem;
}

test('the text before a call: an edit already on disk is undone; an already written file is unknown', () => {
  const args = { path: 'h.py', old_text: "print('hi')", new_text: "print('hello')" };
  assert.deepEqual(textBeforeCall('edit_file', args, "print('hi')\n"), { known: true, text: "print('hi')\n" });
  assert.deepEqual(textBeforeCall('edit_file', args, "print('hello')\n"), { known: true, text: "print('hi')\n" });
  assert.deepEqual(textBeforeCall('write_file', { path: 'n', content: 'new' }, 'new'), { known: false, text: null });
  assert.deepEqual(textBeforeCall('write_file', { path: 'n', content: 'new' }, null), { known: true, text: null });
  assert.deepEqual(textBeforeCall('write_file', { path: 'n', content: 'new' }, 'old'), { known: true, text: 'old' });
});
