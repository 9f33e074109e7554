/**
 * What an edit tool call would do to a file, computed from its arguments (`write_file`:
 * `{path, content}`, `edit_file`: `{path, old_text, new_text}`) — for the diff
 * shown before the user allows it, and for "what did the run change". Pure: tested in Node.
 */

export const EDIT_TOOLS = new Set(['write_file', 'edit_file']);

/** The file an edit call targets, or null when the call is not an edit. */
export function editPath(tool: string, args: Record<string, unknown> | null): string | null {
  if (!EDIT_TOOLS.has(tool) || !args) return null;
  return typeof args.path === 'string' && args.path.trim() ? args.path : null;
}

export type Proposal = { ok: true; text: string } | { ok: false; problem: string };

function occurrences(haystack: string, needle: string): number {
  if (!needle) return 0;
  let count = 0;
  for (let at = haystack.indexOf(needle); at >= 0; at = haystack.indexOf(needle, at + needle.length)) count++;
  return count;
}

/** The file's text after the call, given its text now (null: the file does not exist). */
export function proposedText(tool: string, args: Record<string, unknown>, current: string | null): Proposal {
  if (tool === 'write_file') {
    return typeof args.content === 'string' ? { ok: true, text: args.content } : { ok: false, problem: 'no content given' };
  }
  if (tool !== 'edit_file') return { ok: false, problem: `${tool} is not an edit` };
  const oldText = args.old_text;
  const newText = args.new_text;
  if (typeof oldText !== 'string' || typeof newText !== 'string') return { ok: false, problem: 'old_text/new_text missing' };
  if (current === null) return { ok: false, problem: 'the file does not exist' };
  const count = occurrences(current, oldText);
  if (count === 0) return { ok: false, problem: 'old_text is not in the file (the edit will fail)' };
  if (count > 1) return { ok: false, problem: `old_text occurs ${count} times (the edit will fail)` };
  const at = current.indexOf(oldText);
  return { ok: true, text: current.slice(0, at) + newText + current.slice(at + oldText.length) };
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
