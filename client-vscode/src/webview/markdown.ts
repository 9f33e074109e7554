/**
 * A small Markdown renderer for assistant messages: headings, paragraphs, lists, quotes,
 * rules, fenced code (with a minimal highlighter), inline code, emphasis and links.
 * Every piece of source text is HTML-escaped before markup is added, so model output can
 * never inject elements; links become text with their target in a title (the webview loads
 * nothing remote).
 */

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

const KEYWORDS = new Set(
  (
    'abstract and as async await break case catch class const continue def default del do elif else enum ' +
    'except export extends false finally fn for from func function go if impl import in interface is lambda ' +
    'let match mut new nil none not null or package pass private protected pub public raise return self ' +
    'static struct super switch this throw true try type typeof undefined use var void while with yield'
  ).split(' '),
);

// One alternation, tried left to right at each position: comments, strings, numbers, words.
const TOKEN = /(\/\/[^\n]*|#[^\n]*|\/\*[\s\S]*?\*\/)|("(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|`(?:\\.|[^`\\])*`)|(\b\d+(?:\.\d+)?\b)|([A-Za-z_][A-Za-z0-9_]*)/g;

/** Wraps comments, strings, numbers and keywords in spans; everything else is escaped text. */
export function highlightCode(code: string, language = ''): string {
  const hashComments = /^(py|python|sh|bash|shell|zsh|ruby|rb|yaml|yml|toml|perl|r|make|dockerfile|)$/i.test(language);
  let out = '';
  let last = 0;
  for (const match of code.matchAll(TOKEN)) {
    const index = match.index ?? 0;
    const [whole, comment, string, number, word] = match;
    if (comment !== undefined && comment.startsWith('#') && !hashComments) {
      continue;
    }
    out += escapeHtml(code.slice(last, index));
    if (comment !== undefined) out += `<span class="tok-comment">${escapeHtml(whole)}</span>`;
    else if (string !== undefined) out += `<span class="tok-string">${escapeHtml(whole)}</span>`;
    else if (number !== undefined) out += `<span class="tok-number">${escapeHtml(whole)}</span>`;
    else if (word !== undefined && KEYWORDS.has(word)) out += `<span class="tok-keyword">${escapeHtml(whole)}</span>`;
    else out += escapeHtml(whole);
    last = index + whole.length;
  }
  return out + escapeHtml(code.slice(last));
}

/** Inline markup on one escaped line: `code`, **bold**, *italic*, _italic_, [text](url). */
export function renderInline(text: string): string {
  const codeSpans: string[] = [];
  // Code spans first so their content is not touched by the other rules.
  let html = text.replace(/`([^`\n]+)`/g, (_m, code: string) => {
    codeSpans.push(`<code>${escapeHtml(code)}</code>`);
    return `\u0000${codeSpans.length - 1}\u0000`;
  });
  html = escapeHtml(html);
  html = html.replace(/\[([^\]\n]+)\]\(([^)\s]+)\)/g, (_m, label: string, url: string) =>
    `<span class="link" title="${url}">${label}</span>`);
  html = html.replace(/\*\*([^*\n]+)\*\*/g, '<strong>$1</strong>');
  html = html.replace(/__([^_\n]+)__/g, '<strong>$1</strong>');
  html = html.replace(/(^|[^*\w])\*([^*\n]+)\*(?!\w)/g, '$1<em>$2</em>');
  html = html.replace(/(^|[^_\w])_([^_\n]+)_(?!\w)/g, '$1<em>$2</em>');
  html = html.replace(/~~([^~\n]+)~~/g, '<del>$1</del>');
  return html.replace(/\u0000(\d+)\u0000/g, (_m, i: string) => codeSpans[Number(i)]);
}

interface ListFrame {
  ordered: boolean;
  items: string[];
}

export function renderMarkdown(source: string): string {
  const lines = source.replace(/\r\n?/g, '\n').split('\n');
  const out: string[] = [];
  let paragraph: string[] = [];
  let list: ListFrame | null = null;
  let quote: string[] = [];

  const flushParagraph = (): void => {
    if (paragraph.length) out.push(`<p>${paragraph.map(renderInline).join('<br>')}</p>`);
    paragraph = [];
  };
  const flushList = (): void => {
    if (list) {
      const tag = list.ordered ? 'ol' : 'ul';
      out.push(`<${tag}>${list.items.map((i) => `<li>${i}</li>`).join('')}</${tag}>`);
    }
    list = null;
  };
  const flushQuote = (): void => {
    if (quote.length) out.push(`<blockquote>${renderMarkdown(quote.join('\n'))}</blockquote>`);
    quote = [];
  };
  const flushAll = (): void => {
    flushParagraph();
    flushList();
    flushQuote();
  };

  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = /^\s*(```+|~~~+)\s*([\w+#.-]*)\s*$/.exec(line);
    if (fence) {
      flushAll();
      const marker = fence[1];
      const language = fence[2] ?? '';
      const body: string[] = [];
      i++;
      // An unterminated fence (still streaming) runs to the end of the text.
      while (i < lines.length && !lines[i].trim().startsWith(marker)) body.push(lines[i++]);
      const cls = language ? ` class="language-${escapeHtml(language)}"` : '';
      out.push(`<pre><code${cls}>${highlightCode(body.join('\n'), language)}</code></pre>`);
      continue;
    }
    const quoted = /^\s*>\s?(.*)$/.exec(line);
    if (quoted) {
      flushParagraph();
      flushList();
      quote.push(quoted[1]);
      continue;
    }
    flushQuote();
    if (!line.trim()) {
      flushParagraph();
      flushList();
      continue;
    }
    const heading = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      flushAll();
      const level = heading[1].length;
      out.push(`<h${level}>${renderInline(heading[2])}</h${level}>`);
      continue;
    }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      flushAll();
      out.push('<hr>');
      continue;
    }
    const item = /^\s*(?:([-*+])|(\d+)[.)])\s+(.*)$/.exec(line);
    if (item) {
      flushParagraph();
      const ordered = item[2] !== undefined;
      if (list && list.ordered !== ordered) flushList();
      if (!list) list = { ordered, items: [] };
      const task = /^\[([ xX])\]\s+(.*)$/.exec(item[3]);
      const body = task
        ? `<span class="task">${task[1] === ' ' ? '☐' : '☑'}</span> ${renderInline(task[2])}`
        : renderInline(item[3]);
      (list as ListFrame).items.push(body);
      continue;
    }
    if (list && /^\s{2,}\S/.test(line)) {
      const items = (list as ListFrame).items;
      items[items.length - 1] += `<br>${renderInline(line.trim())}`;
      continue;
    }
    flushList();
    paragraph.push(line);
  }
  flushAll();
  return out.join('\n');
}
