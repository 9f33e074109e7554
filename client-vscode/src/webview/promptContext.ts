/**
 * Context the user adds to a prompt in the chat: `@` file mentions (the workspace's files,
 * filtered as the user types) and editor selections (path, lines and text, capped), sent as
 * plain text with the prompt — the server takes text. Pure: tested in Node.
 */

/** At most this many workspace paths are offered to `@` (the host lists no more). */
export const MAX_MENTION_FILES = 5000;
/** At most this many suggestions are shown at once. */
export const MAX_SUGGESTIONS = 12;
/** A selection is cut to this many lines and characters. */
export const MAX_SELECTION_LINES = 200;
export const MAX_SELECTION_CHARS = 10_000;

/** An `@mention` being typed: where its `@` is and what follows it up to the caret. */
export interface MentionQuery {
  start: number;
  query: string;
}

/** The mention the caret is in, if any: an `@` at the start or after whitespace, with no
 * whitespace between it and the caret. */
export function mentionAt(text: string, caret: number): MentionQuery | null {
  const before = text.slice(0, caret);
  const match = /(^|\s)@([^\s@]*)$/.exec(before);
  if (!match) return null;
  return { start: caret - match[2].length - 1, query: match[2] };
}

/** The files that match `query`, best first: a name starting with it, a name containing
 * it, a path containing it, then the path's characters in order; shorter paths first. */
export function matchFiles(files: readonly string[], query: string, limit = MAX_SUGGESTIONS): string[] {
  const q = query.toLowerCase();
  const scored: [number, string][] = [];
  for (const file of files) {
    const path = file.toLowerCase();
    const name = path.slice(path.lastIndexOf('/') + 1);
    let score: number;
    if (!q) score = 3;
    else if (name.startsWith(q)) score = 0;
    else if (name.includes(q)) score = 1;
    else if (path.includes(q)) score = 2;
    else if (inOrder(path, q)) score = 4;
    else continue;
    scored.push([score, file]);
  }
  scored.sort((a, b) => a[0] - b[0] || a[1].length - b[1].length || (a[1] < b[1] ? -1 : 1));
  return scored.slice(0, limit).map(([, file]) => file);
}

function inOrder(text: string, query: string): boolean {
  let at = 0;
  for (const char of query) {
    at = text.indexOf(char, at);
    if (at < 0) return false;
    at++;
  }
  return true;
}

/** The text with the mention replaced by `@path` and a space; the caret after it. A path
 * with whitespace is quoted in backticks. */
export function insertMention(text: string, mention: MentionQuery, caret: number, path: string): { text: string; caret: number } {
  const shown = /\s/.test(path) ? `@\`${path}\`` : `@${path}`;
  const head = text.slice(0, mention.start) + shown + ' ';
  const tail = text.slice(caret).replace(/^ /, '');
  return { text: head + tail, caret: head.length };
}

/** An editor selection attached to a prompt. Lines are 1-based and inclusive. */
export interface SelectionContext {
  path: string;
  startLine: number;
  endLine: number;
  /** The editor's language id (the fence's language). */
  language: string;
  text: string;
  /** Lines in the selection before any cut. */
  totalLines: number;
  /** The text was cut to the limits. */
  truncated: boolean;
}

/** Where a selection is, for its chip: `src/a.py:3–7` (one line: `src/a.py:3`). */
export function selectionLabel(s: Pick<SelectionContext, 'path' | 'startLine' | 'endLine'>): string {
  return `${s.path}:${s.startLine}${s.endLine !== s.startLine ? `–${s.endLine}` : ''}`;
}

/** A selection's text cut to the limits (whole lines first, then characters). */
export function capSelection(text: string): { text: string; totalLines: number; truncated: boolean } {
  const lines = text.split('\n');
  let kept = lines.length > MAX_SELECTION_LINES ? lines.slice(0, MAX_SELECTION_LINES).join('\n') : text;
  if (kept.length > MAX_SELECTION_CHARS) kept = kept.slice(0, MAX_SELECTION_CHARS);
  return { text: kept, totalLines: lines.length, truncated: kept.length < text.length };
}

/** A fence longer than any run of backticks in `text`. */
function fenceFor(text: string): string {
  const longest = Math.max(0, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  return '`'.repeat(Math.max(3, longest + 1));
}

/** The prompt as sent: the user's text, then each selection as a fenced block under a line
 * that names its file and lines. */
export function promptWithContext(text: string, selections: readonly SelectionContext[]): string {
  if (selections.length === 0) return text;
  const blocks = selections.map((s) => {
    const lines = s.endLine !== s.startLine ? `lines ${s.startLine}–${s.endLine}` : `line ${s.startLine}`;
    const cut = s.truncated ? ` (cut to its first ${s.text.split('\n').length} lines, ${s.text.length} characters)` : '';
    const fence = fenceFor(s.text);
    const language = /^[\w+#.-]*$/.test(s.language) ? s.language : '';
    return `Selected in ${s.path}, ${lines}${cut}:\n${fence}${language}\n${s.text.replace(/\n$/, '')}\n${fence}`;
  });
  return [text.trimEnd(), ...blocks].join('\n\n');
}
