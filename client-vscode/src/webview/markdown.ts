/**
 * Markdown of the model's messages, plans and summaries, rendered by `markdown-it` (CommonMark
 * plus tables and strikethrough) for the chat webview. The model's text is hostile: HTML is
 * off (any tag in the source is shown as text), images become their alt text (the webview
 * loads nothing), and a link keeps its target only when it is http(s): any other link
 * (`javascript:`, `data:`, `vscode:`, `command:`, a relative path) becomes plain text. Fenced
 * code goes through a minimal highlighter that escapes everything it emits.
 */
import MarkdownIt from 'markdown-it';

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

/** Link targets kept as links: web pages only. */
const SAFE_LINK = /^https?:\/\/[^\s]+$/i;

export function safeLink(href: string): boolean {
  return SAFE_LINK.test(href.trim());
}

const md = new MarkdownIt('default', {
  html: false,
  linkify: false,
  typographer: false,
  breaks: false,
  highlight: (code, language) => highlightCode(code.replace(/\n$/, ''), language.trim().split(/\s+/)[0] ?? ''),
});

// Checklist marks (`[ ]`, `[x]`, `[~]`) at the start of a list item stay what PLAN.md shows,
// as a mark the chat can style.
md.core.ruler.after('inline', 'checklist_marks', (state) => {
  const tokens = state.tokens;
  for (let i = 2; i < tokens.length; i++) {
    const inline = tokens[i];
    if (inline.type !== 'inline' || tokens[i - 1].type !== 'paragraph_open' || tokens[i - 2].type !== 'list_item_open') continue;
    const first = inline.children?.[0];
    const mark = first && first.type === 'text' ? /^\[( |x|X|~)\](?=\s|$)/.exec(first.content) : null;
    if (!first || !mark) continue;
    const status = mark[1] === ' ' ? 'pending' : mark[1] === '~' ? 'in_progress' : 'completed';
    const html = new state.Token('html_inline', '', 0);
    html.content = `<span class="task task-${status}" data-mark="${escapeHtml(mark[0])}">${escapeHtml(mark[0])}</span>`;
    first.content = first.content.slice(mark[0].length);
    inline.children?.unshift(html);
  }
});

// `html: false` means the source's HTML is text; the rule above is the only producer of
// `html_inline` tokens, so rendering them raw is safe.
const defaultLinkOpen = md.renderer.rules.link_open;
md.renderer.rules.link_open = (tokens, index, options, env, self) => {
  const token = tokens[index];
  const href = String(token.attrGet('href') ?? '');
  if (!safeLink(href)) {
    // The text stays; the link does not (its close is dropped in `link_close`).
    token.meta = { ...(token.meta ?? {}), dropped: true };
    return '';
  }
  token.attrSet('title', href);
  token.attrSet('class', 'link');
  return defaultLinkOpen ? defaultLinkOpen(tokens, index, options, env, self) : self.renderToken(tokens, index, options);
};
md.renderer.rules.link_close = (tokens, index, options, _env, self) => {
  // The matching open is the nearest earlier link_open at the same nesting.
  let depth = 0;
  for (let i = index - 1; i >= 0; i--) {
    if (tokens[i].type === 'link_close') depth++;
    else if (tokens[i].type === 'link_open') {
      if (depth === 0) return tokens[i].meta?.dropped ? '' : self.renderToken(tokens, index, options);
      depth--;
    }
  }
  return '';
};
md.renderer.rules.image = (tokens, index) => {
  const token = tokens[index];
  const alt = token.children ? token.children.map((c) => c.content).join('') : token.content;
  return alt ? `<span class="image-alt">[${escapeHtml(alt)}]</span>` : '';
};

/** The HTML of a Markdown text (safe to put into the chat as is). */
export function renderMarkdown(source: string): string {
  return md.render(source);
}

/** Inline Markdown of one line (no paragraph around it). */
export function renderInline(text: string): string {
  return md.renderInline(text);
}
