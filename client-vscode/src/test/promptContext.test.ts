import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  MAX_SELECTION_LINES, capSelection, insertMention, matchFiles, mentionAt, promptWithContext, selectionLabel,
} from '../webview/promptContext';

test('@ starts a mention at the start or after whitespace, up to the caret', () => {
  assert.deepEqual(mentionAt('@', 1), { start: 0, query: '' });
  assert.deepEqual(mentionAt('look at @src/he', 15), { start: 8, query: 'src/he' });
  assert.equal(mentionAt('mail me@example.com', 19), null, 'an @ inside a word is not a mention');
  assert.equal(mentionAt('@done and more', 14), null, 'whitespace after it ends the mention');
  assert.deepEqual(mentionAt('a @x b', 4), { start: 2, query: 'x' }, 'the caret decides, not the end of the text');
});

test('files match by name first, then path, then characters in order; bounded', () => {
  const files = ['src/hello.py', 'tests/test_hello.py', 'docs/hello-world.md', 'src/other.py', 'README.md'];
  assert.deepEqual(matchFiles(files, 'hello'), ['src/hello.py', 'docs/hello-world.md', 'tests/test_hello.py']);
  assert.deepEqual(matchFiles(files, 'src/'), ['src/hello.py', 'src/other.py']);
  assert.deepEqual(matchFiles(files, 'rdm'), ['README.md', 'docs/hello-world.md']);
  assert.deepEqual(matchFiles(files, 'HELLO.PY').slice(0, 1), ['src/hello.py']);
  assert.equal(matchFiles(Array.from({ length: 100 }, (_, i) => `f${i}.txt`), '', 5).length, 5);
  assert.deepEqual(matchFiles(files, 'zzz'), []);
});

test('the chosen path replaces the typed mention, the caret after it', () => {
  const text = 'explain @hel please';
  const mention = mentionAt(text, 12) ?? assert.fail('no mention');
  assert.deepEqual(insertMention(text, mention, 12, 'src/hello.py'), { text: 'explain @src/hello.py please', caret: 22 });
  assert.deepEqual(insertMention('@', { start: 0, query: '' }, 1, 'my file.txt'), { text: '@`my file.txt` ', caret: 15 });
});

test('a selection goes with the prompt as a fenced block naming its file and lines', () => {
  const sent = promptWithContext('Why does this fail?', [
    { path: 'src/a.py', startLine: 3, endLine: 4, language: 'python', text: 'x = 1\ny = "```"\n', totalLines: 2, truncated: false },
  ]);
  assert.equal(sent, 'Why does this fail?\n\nSelected in src/a.py, lines 3–4:\n````python\nx = 1\ny = "```"\n````');
  assert.equal(promptWithContext('plain', []), 'plain');
  assert.equal(selectionLabel({ path: 'a.py', startLine: 7, endLine: 7 }), 'a.py:7');
  assert.equal(selectionLabel({ path: 'a.py', startLine: 7, endLine: 9 }), 'a.py:7–9');
});

test('a large selection is cut, and the prompt says so', () => {
  const big = Array.from({ length: 1000 }, (_, i) => `line ${i}`).join('\n');
  const capped = capSelection(big);
  assert.equal(capped.text.split('\n').length, MAX_SELECTION_LINES);
  assert.equal(capped.totalLines, 1000);
  assert.equal(capped.truncated, true);
  const wide = capSelection('x'.repeat(50_000));
  assert.equal(wide.text.length, 10_000);
  const sent = promptWithContext('q', [{ path: 'big.txt', startLine: 1, endLine: 1000, language: 'plaintext', ...capped }]);
  assert.match(sent, /Selected in big\.txt, lines 1–1000 \(cut to its first 200 lines, \d+ characters\):/);
  assert.equal(capSelection('short').truncated, false);
});
