import { test } from 'node:test';
import assert from 'node:assert/strict';
import { escapeHtml, highlightCode, renderInline, renderMarkdown, safeLink } from '../webview/markdown';

/** The elements and attributes a hostile text must never produce. */
function assertInert(html: string): void {
  assert.doesNotMatch(html, /<(script|img|iframe|object|embed|style|svg|form|input|a\s[^>]*href="(?!https?:))/i, html);
  assert.doesNotMatch(html, /<[^>]*\son\w+=/i, `an event handler survived: ${html}`);
  assert.doesNotMatch(html, /href="\s*(javascript|data|vbscript|file|command|vscode):/i, html);
}

test('hostile model output: raw HTML, <img onerror>, javascript: links and images render as text', () => {
  const hostile = [
    '<script>alert(1)</script>',
    '',
    '<img src=x onerror=alert(1)>',
    '',
    '<div onclick="alert(1)">raw <b>html</b></div>',
    '',
    'inline <iframe src="https://evil.test"></iframe> and <a href="javascript:alert(1)">x</a>',
    '',
    '[click](javascript:alert(1)) [data](data:text/html;base64,PHNjcmlwdD4=) [cmd](command:workbench.action.terminal.new)',
    '[spaced](  javascript:alert(1)) [entity](jav&#x61;script:alert(1)) <javascript:alert(1)>',
    '',
    '![x](https://evil.test/pixel.png "t") ![y](x" onerror="alert(1))',
    '',
    '```html\n<img src=x onerror=alert(1)>\n```',
  ].join('\n');
  const html = renderMarkdown(hostile);
  assertInert(html);
  // Shown as text, not dropped: the user sees what the model wrote.
  assert.ok(html.includes('&lt;script&gt;alert(1)&lt;/script&gt;'), html);
  assert.ok(html.includes('&lt;img src=x onerror=alert(1)&gt;'), html);
  assert.ok(html.includes('click'), html);
  assert.ok(html.includes('[x]'), 'an image shows its alt text');
  for (const line of hostile.split('\n')) assertInert(renderInline(line));
});

test('a web link stays a link, with its target shown; other targets are text only', () => {
  const html = renderInline('[docs](https://example.com/x) [rel](src/a.py)');
  assert.match(html, /<a href="https:\/\/example\.com\/x" title="https:\/\/example\.com\/x" class="link">docs<\/a>/);
  assert.ok(html.includes('rel') && !html.includes('src/a.py"'), html);
  assert.equal(safeLink('https://example.com'), true);
  assert.equal(safeLink('javascript:alert(1)'), false);
  assert.equal(safeLink('HTTP://x.test/a b'), false);
});

test('CommonMark and tables through markdown-it: nested lists, tables, strikethrough, quotes', () => {
  const html = renderMarkdown(
    '# Plan\n\nSome *text* and **bold** and ~~old~~.\n\n1. one\n   - nested\n2. two\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n> note',
  );
  assert.ok(html.includes('<h1>Plan</h1>'), html);
  assert.ok(html.includes('<em>text</em>') && html.includes('<strong>bold</strong>') && html.includes('<s>old</s>'), html);
  assert.match(html, /<ol>\s*<li>one\s*<ul>\s*<li>nested<\/li>/);
  assert.match(html, /<table>[\s\S]*<th>a<\/th>[\s\S]*<td>2<\/td>[\s\S]*<\/table>/);
  assert.match(html, /<blockquote>\s*<p>note<\/p>\s*<\/blockquote>/);
});

test("checklist items keep PLAN.md's marks: [ ], [x], [~]", () => {
  const html = renderMarkdown('- [ ] first\n- [x] second\n- [~] third\n- plain [x] later');
  assert.ok(html.includes('<span class="task task-pending" data-mark="[ ]">[ ]</span> first'), html);
  assert.ok(html.includes('<span class="task task-completed" data-mark="[x]">[x]</span> second'), html);
  assert.ok(html.includes('<span class="task task-in_progress" data-mark="[~]">[~]</span> third'), html);
  assert.ok(html.includes('<li>plain [x] later</li>'), html);
});

test('fenced code is highlighted and escaped; an unterminated fence (still streaming) renders', () => {
  const html = renderMarkdown('```python\ndef f(x):  # hi\n    return "a<b"\n```');
  assert.ok(html.includes('<pre><code class="language-python">'), html);
  assert.ok(html.includes('<span class="tok-keyword">def</span>'));
  assert.ok(html.includes('<span class="tok-comment"># hi</span>'));
  assert.ok(html.includes('<span class="tok-string">&quot;a&lt;b&quot;</span>'));
  const streaming = renderMarkdown('text\n```js\nconst a = 1;');
  assert.ok(streaming.includes('<span class="tok-keyword">const</span>'), streaming);
  assert.ok(streaming.includes('<span class="tok-number">1</span>'));
});

test('inline code keeps its content literal; snake_case stays', () => {
  assert.equal(renderInline('use `a*b*c` now'), 'use <code>a*b*c</code> now');
  assert.equal(renderInline('snake_case_name'), 'snake_case_name');
});

test('hash is a comment only in languages that use it', () => {
  assert.ok(highlightCode('# c', 'sh').includes('tok-comment'));
  assert.ok(!highlightCode('#include <x>', 'c').includes('tok-comment'));
  assert.equal(escapeHtml(`<"'&>`), '&lt;&quot;&#39;&amp;&gt;');
});
