/**
 * "Comment on these lines…" on a plan (no `vscode` here: tested in plain Node).
 *
 * The server's code action runs `planLsp.commentOnPlan` with `{planUri, range}` and no text;
 * without a text the server would put a `> comment: ` line under the lines for the user to
 * type (clients without an input box). The extension asks in an input box instead and sends
 * `{planUri, range, text}`; Escape or an empty box sends nothing.
 *
 * The action acts on the selection, so it is offered where Ctrl+. looks: VS Code's Quick Fix
 * menu leaves `source` actions out, and the server gives its plan actions that kind.
 */
import type { Wire } from './wireTypes';

export const COMMENT_ON_PLAN_COMMAND = 'planLsp.commentOnPlan';

type CommentArgs = Wire.CommentOnPlanParams;

export interface CommentBox {
  title: string;
  prompt: string;
  placeHolder: string;
}

function commentArgsOf(args: readonly unknown[] | undefined): CommentArgs | undefined {
  const first = args?.[0];
  if (!first || typeof first !== 'object') return undefined;
  const range = (first as { range?: unknown }).range as CommentArgs['range'] | undefined;
  if (!range || typeof range.start?.line !== 'number' || typeof range.end?.line !== 'number') return undefined;
  return first as CommentArgs;
}

/** The code action's command (a range, no text): the extension asks for the comment. */
export function asksForComment(command: string, args: readonly unknown[] | undefined): boolean {
  if (command !== COMMENT_ON_PLAN_COMMAND) return false;
  const given = commentArgsOf(args);
  return given !== undefined && !(typeof given.text === 'string' && given.text.trim());
}

/** The 1-based first and last line of `range`, as the server counts them: a selection of
 * whole lines ends at the start of the next line, which is not commented on. */
export function commentedLines(range: CommentArgs['range']): { first: number; last: number } {
  const first = range.start.line;
  let last = Math.max(first, range.end.line);
  if (last > first && range.end.character === 0) last -= 1;
  return { first: first + 1, last: last + 1 };
}

export function commentBox(range: CommentArgs['range']): CommentBox {
  const { first, last } = commentedLines(range);
  const lines = first === last ? `line ${first}` : `lines ${first}–${last}`;
  return {
    title: `Comment on ${lines}`,
    prompt: 'The comment shows on these lines; "Send comments and revise" sends it to the model with the lines. (Escape: cancel)',
    placeHolder: 'e.g. split this step; say which file',
  };
}

/** The command's arguments with what the user typed (undefined: Escape or nothing typed:
 * nothing is sent). */
export function commentArgs(args: readonly unknown[] | undefined, input: string | undefined): [CommentArgs] | undefined {
  const given = commentArgsOf(args);
  const text = input?.trim();
  if (!given || !text) return undefined;
  return [{ ...given, text }];
}

/** Whether a code action of the server's, by its command, acts on the selection (shown by
 * Ctrl+. whatever kind the server gave it). */
export function actsOnSelection(command: string | undefined): boolean {
  return command === COMMENT_ON_PLAN_COMMAND;
}
