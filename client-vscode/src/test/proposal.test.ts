import { test } from 'node:test';
import assert from 'node:assert/strict';
import { editPath, proposedText, textBeforeCall } from '../proposal';

test('edit calls name their file; other calls do not', () => {
  assert.equal(editPath('write_file', { path: 'a.py', content: '' }), 'a.py');
  assert.equal(editPath('edit_file', { path: 'src/b.py' }), 'src/b.py');
  assert.equal(editPath('bash', { path: 'a.py' }), null);
  assert.equal(editPath('write_file', { content: 'x' }), null);
  assert.equal(editPath('write_file', null), null);
});

test('write_file proposes its content; a new file has no current text', () => {
  assert.deepEqual(proposedText('write_file', { path: 'n.py', content: 'x = 1\n' }, null), { ok: true, text: 'x = 1\n' });
  assert.equal(proposedText('write_file', { path: 'n.py' }, 'old').ok, false);
});

test('edit_file replaces the one occurrence; a missing or repeated old_text cannot be previewed', () => {
  assert.deepEqual(
    proposedText('edit_file', { path: 'h.py', old_text: "print('hi')", new_text: "print('hello, world')" }, "import os\nprint('hi')\n"),
    { ok: true, text: "import os\nprint('hello, world')\n" },
  );
  const missing = proposedText('edit_file', { path: 'h.py', old_text: 'nope', new_text: 'x' }, 'abc');
  assert.equal(missing.ok, false);
  assert.match(missing.ok ? '' : missing.problem, /not in the file/);
  const twice = proposedText('edit_file', { path: 'h.py', old_text: 'a', new_text: 'x' }, 'a a');
  assert.match(twice.ok ? '' : twice.problem, /2 times/);
  assert.equal(proposedText('edit_file', { path: 'h.py', old_text: 'a', new_text: 'b' }, null).ok, false);
});

test('the text before a call: an edit already on disk is undone; an already written file is unknown', () => {
  const args = { path: 'h.py', old_text: "print('hi')", new_text: "print('hello')" };
  assert.deepEqual(textBeforeCall('edit_file', args, "print('hi')\n"), { known: true, text: "print('hi')\n" });
  assert.deepEqual(textBeforeCall('edit_file', args, "print('hello')\n"), { known: true, text: "print('hi')\n" });
  assert.deepEqual(textBeforeCall('write_file', { path: 'n', content: 'new' }, 'new'), { known: false, text: null });
  assert.deepEqual(textBeforeCall('write_file', { path: 'n', content: 'new' }, null), { known: true, text: null });
  assert.deepEqual(textBeforeCall('write_file', { path: 'n', content: 'new' }, 'old'), { known: true, text: 'old' });
});
