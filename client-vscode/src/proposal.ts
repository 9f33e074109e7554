/**
 * Edit calls as the client sees them: the diff a permission request shows is the server's
 * (its `change`: the file's text before and the exact text the tool writes), never computed
 * here; what a run changed in a file is diffed against a copy taken when the run first
 * touched it. Pure: tested in Node.
 */

export const EDIT_TOOLS = new Set(['write_file', 'edit_file']);

/** The file an edit call targets, or null when the call is not an edit. */
export function editPath(tool: string, args: Record<string, unknown> | null): string | null {
  if (!EDIT_TOOLS.has(tool) || !args) return null;
  return typeof args.path === 'string' && args.path.trim() ? args.path : null;
}

/** What a permission request's diff shows: the server's own texts, computed by the code the
 * tool runs (`change` of `planLsp/requestPermission`), or why there is no diff. */
export type RequestDiff =
  | { ok: true; uri: string; before: string | null; after: string }
  | { ok: false; problem: string };

/** The diff of a permission request's `change`: its before-text (null: a new file) against
 * its after-text. No change (not an edit, or a call the server knows will fail) or a change
 * too big to send (`truncated`) shows no diff, only the request's summary. */
export function requestDiff(change: unknown): RequestDiff {
  if (!change || typeof change !== 'object') return { ok: false, problem: 'the server sent no change to show' };
  const c = change as Record<string, unknown>;
  if (c.truncated === true) return { ok: false, problem: 'the change is too big to show' };
  if (typeof c.uri !== 'string' || typeof c.after !== 'string' || (c.before !== null && typeof c.before !== 'string')) {
    return { ok: false, problem: 'the change the server sent is incomplete' };
  }
  return { ok: true, uri: c.uri, before: c.before as string | null, after: c.after };
}

function occurrences(haystack: string, needle: string): number {
  if (!needle) return 0;
  let count = 0;
  for (let at = haystack.indexOf(needle); at >= 0; at = haystack.indexOf(needle, at + needle.length)) count++;
  return count;
}

/**
 * The file's text before a call, from its text when the client heard of the call. A disk
 * write may already have happened by then (the call notice and the write race): an
 * `edit_file` whose new text is there and whose old text is not is undone; a `write_file`
 * whose content is already there leaves the earlier text unknown (null).
 */
export function textBeforeCall(tool: string, args: Record<string, unknown>, seen: string | null): { known: boolean; text: string | null } {
  if (tool === 'write_file') {
    if (seen !== null && typeof args.content === 'string' && seen === args.content) return { known: false, text: null };
    return { known: true, text: seen };
  }
  if (tool === 'edit_file' && seen !== null && typeof args.old_text === 'string' && typeof args.new_text === 'string') {
    if (occurrences(seen, args.old_text) === 0 && occurrences(seen, args.new_text) === 1) {
      const at = seen.indexOf(args.new_text);
      return { known: true, text: seen.slice(0, at) + args.old_text + seen.slice(at + args.new_text.length) };
    }
  }
  return { known: true, text: seen };
}
