import { test } from 'node:test';
import assert from 'node:assert/strict';
import { escapeHtml, highlightCode, renderInline, renderMarkdown } from '../webview/markdown';

test('HTML in model output is escaped, never rendered', () => {
  const html = renderMarkdown('<script>alert(1)</script>\n\n<img src=x onerror=alert(1)>');
  assert.ok(!html.includes('<script>'));
  assert.ok(!html.includes('<img'));
  assert.ok(html.includes('&lt;script&gt;'));
});

test('headings, paragraphs, lists and quotes', () => {
  const html = renderMarkdown('# Plan\n\nSome *text* and **bold**.\n\n1. one\n2. two\n\n- a\n- [x] done\n\n> note');
  assert.ok(html.includes('<h1>Plan</h1>'));
  assert.ok(html.includes('<em>text</em>'));
  assert.ok(html.includes('<strong>bold</strong>'));
  assert.ok(html.includes('<ol><li>one</li><li>two</li></ol>'));
  assert.ok(html.includes('<ul><li>a</li><li><span class="task">☑</span> done</li></ul>'));
  assert.ok(html.includes('<blockquote><p>note</p></blockquote>'));
});

test('fenced code is highlighted and escaped; an unterminated fence still renders', () => {
  const html = renderMarkdown('```python\ndef f(x):  # hi\n    return "a<b"\n```');
  assert.ok(html.includes('<pre><code class="language-python">'));
  assert.ok(html.includes('<span class="tok-keyword">def</span>'));
  assert.ok(html.includes('<span class="tok-comment"># hi</span>'));
  assert.ok(html.includes('<span class="tok-string">&quot;a&lt;b&quot;</span>'));
  const streaming = renderMarkdown('text\n```js\nconst a = 1;');
  assert.ok(streaming.includes('<span class="tok-keyword">const</span>'));
  assert.ok(streaming.includes('<span class="tok-number">1</span>'));
});

test('inline code keeps its content literal; links become inert text', () => {
  assert.equal(renderInline('use `a*b*c` now'), 'use <code>a*b*c</code> now');
  const link = renderInline('[docs](https://example.com/x)');
  assert.ok(!link.includes('<a '));
  assert.ok(link.includes('title="https://example.com/x"'));
  assert.equal(renderInline('snake_case_name'), 'snake_case_name');
});

test('hash is a comment only in languages that use it', () => {
  assert.ok(highlightCode('# c', 'sh').includes('tok-comment'));
  assert.ok(!highlightCode('#include <x>', 'c').includes('tok-comment'));
  assert.equal(escapeHtml(`<"'&>`), '&lt;&quot;&#39;&amp;&gt;');
});
