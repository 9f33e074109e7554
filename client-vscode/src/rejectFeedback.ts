/**
 * Reject… and Revise… ask for feedback (no `vscode` here: tested in plain Node).
 *
 * - Reject… (a submitted plan, or a draft a run left): Escape cancels; an empty box rejects
 *   without feedback — the plan stays approvable and revisable; text starts a revision.
 * - Revise… (a rejected plan): Escape or an empty box cancels; text starts a revision.
 *
 * The server's lens and code action carry `confirm` (a client that cannot ask is asked by
 * the server); the extension asks itself and sends what it got, never `confirm`.
 */
import type { RejectPlanArgs } from './wireTypes';

export const REJECT_PLAN_COMMAND = 'planLsp.rejectPlan';

export interface FeedbackBox {
  title: string;
  prompt: string;
  placeHolder: string;
}

export function feedbackBox(revising: boolean): FeedbackBox {
  return revising
    ? {
      title: 'Revise the plan',
      prompt: 'What should the agent change? A new planning run receives this. (Escape: cancel)',
      placeHolder: 'e.g. smaller steps; leave the tests alone',
    }
    : {
      title: 'Reject the plan',
      prompt: 'What should the agent change? A new planning run receives this. Empty: reject without feedback (the plan stays approvable). Escape: cancel.',
      placeHolder: 'feedback for a revised plan (optional)',
    };
}

/** The rejection to send for what the user typed (undefined: Escape); undefined: nothing. */
export function rejectArgs(input: string | undefined, revising: boolean): RejectPlanArgs | undefined {
  if (input === undefined) return undefined;
  const feedback = input.trim();
  if (feedback) return { feedback };
  return revising ? undefined : {};
}

/** A Reject…/Revise… the server's lens or code action sent without feedback: the extension
 * asks for the feedback instead of the server. */
export function asksForFeedback(command: string, args: readonly unknown[] | undefined): boolean {
  if (command !== REJECT_PLAN_COMMAND) return false;
  const first = args?.[0];
  if (!first || typeof first !== 'object') return false;
  const { confirm, feedback } = first as { confirm?: unknown; feedback?: unknown };
  return confirm === true && !(typeof feedback === 'string' && feedback.trim());
}
