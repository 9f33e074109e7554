/**
 * "Plan LSP: Show Plans": every plan of the workspace (`planLsp/plans`), each planning round's
 * own file (PLAN.md, PLAN-2.md, …), as a quick pick with its status in words and its date;
 * choosing one opens it. Nothing here imports vscode: the command's wiring passes the server
 * request and the editor's pick and open (extension.ts), so the unit tests run in plain Node.
 */

import type { PlanInfo, PlansResult } from './protocol.generated';

export interface PlanPick {
  label: string;
  description: string;
  detail: string;
  uri: string;
}

export interface PlansUi {
  pick(items: PlanPick[], placeholder: string): Promise<PlanPick | undefined>;
  open(uri: string): Promise<void>;
  info(message: string): void;
}

const WORDS: Record<PlanInfo['status'], string> = {
  drafting: 'being drafted',
  submitted: 'waiting for your decision',
  rejected: 'rejected',
  approved: 'approved, not carried out yet',
  done: 'approved and carried out',
};

/** The plan's status as the user reads it. */
export function statusInWords(status: PlanInfo['status']): string {
  return WORDS[status] ?? status;
}

/** Whether a plan waits for the user's decision (the palette's Approve and Reject are
 * offered only then; the same rule as the chat's plan panel). `running`: a run is going. */
export function awaitsDecision(status: string, running: boolean): boolean {
  return status === 'submitted' || (!running && (status === 'drafting' || status === 'rejected'));
}

/** How the palette's Approve names the plan: its file and its first heading
 * (`PLAN-2.md, "Plan: say goodbye"`). */
export function planName(uri: string, text: string): string {
  const heading = /^#{1,6}[ \t]+(.+?)[ \t#]*$/m.exec(text)?.[1]?.trim();
  const title = heading && heading.length > 80 ? `${heading.slice(0, 79)}…` : heading;
  return title ? `${planFileName(uri)}, "${title}"` : planFileName(uri);
}

/** The file name of a `file:` URI (`PLAN-2.md`), or the URI itself. */
export function planFileName(uri: string): string {
  const last = uri.split('/').pop() ?? uri;
  try {
    return decodeURIComponent(last) || uri;
  } catch {
    return last || uri;
  }
}

/** `2026-12-02 06:10` (UTC) from an ISO 8601 time; the text as given if it is not one. */
export function shortDate(iso: string): string {
  const match = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})/.exec(iso);
  return match ? `${match[1]} ${match[2]}` : iso;
}

/** Text shown as written: VS Code renders `$(name)` in a quick pick as an icon, `\$(name)` as text. */
export function withoutIcons(text: string): string {
  return text.replace(/\$\(/g, '\\$(');
}

/** The quick pick's items: the newest plan first; the session's current plan says so. */
export function planPicks(plans: PlanInfo[]): PlanPick[] {
  return [...plans].reverse().map((plan) => {
    const when = plan.approvedAt ?? plan.updatedAt;
    const revisions = plan.revisions === 1 ? '1 revision' : `${plan.revisions} revisions`;
    return {
      label: `${plan.current ? '$(arrow-right) ' : ''}${withoutIcons(planFileName(plan.uri))}`,
      description: `${plan.carriedOut ? `approved, ${plan.carriedOut}` : statusInWords(plan.status)} · ${shortDate(when)}`,
      detail: `${withoutIcons(plan.title)} — ${revisions}${plan.current ? ' · the current plan' : ''}`,
      uri: plan.uri,
    };
  });
}

/** Lists the plans and opens the one chosen. */
export async function showPlans(list: () => Promise<PlansResult>, ui: PlansUi): Promise<PlanPick | undefined> {
  const { plans } = await list();
  if (!plans.length) {
    ui.info('Plan LSP: no plans yet. In Plan mode, ask for a change: the plan is written to .plan-lsp/plans/PLAN.md.');
    return undefined;
  }
  const chosen = await ui.pick(planPicks(plans), 'Plans of this workspace, newest first: choose one to open it');
  if (chosen) await ui.open(chosen.uri);
  return chosen;
}
