/** The status bar's text and tooltip for a session state (pure, tested in Node). */
import type { SessionState } from './protocol';
import { permissionModeDetail, permissionModeLabel } from './permissionText';
import { isUsage, statusBarFill, usageTooltipLines } from './webview/usage';

/** The key that toggles Plan/Build while the chat has the focus (package.json's keybinding). */
export const MODE_KEY = 'Alt+M';

type StatusFields = Pick<SessionState, 'mode' | 'permissionMode' | 'planShell' | 'sandbox' | 'usage'>;

/** What guards plan-mode shell commands, in a word or two with an icon; empty when unknown. */
export function shellProtectionText(state: Pick<SessionState, 'planShell' | 'sandbox'>): string {
  switch (state.planShell) {
    case 'sandboxed':
      return `$(shield) ${state.sandbox ?? 'sandboxed'}`;
    case 'classified':
      return '$(warning) classifier only';
    case 'off':
      return '$(circle-slash) no shell';
    default:
      return '';
  }
}

/** `$(eye) Plan · Ask before edits · $(shield) bubblewrap`: the shell protection is shown in plan mode,
 * where it is the wall; in build mode commands run subject to permissions. */
export function statusBarText(state: StatusFields): string {
  const mode = state.mode === 'build' ? '$(tools) Build' : '$(eye) Plan';
  const parts = [mode, permissionModeLabel(state.permissionMode)];
  const shell = state.mode === 'plan' ? shellProtectionText(state) : '';
  if (shell) parts.push(shell);
  // The context fill only when it is nearly full (the tooltip always has it).
  const fill = statusBarFill(isUsage(state.usage) ? state.usage : undefined);
  if (fill) parts.push(fill);
  return parts.join(' · ');
}

const SHELL_TOOLTIP: Record<string, string> = {
  sandboxed: 'plan-mode shell commands run in a read-only, offline sandbox',
  classified: 'no sandbox here: only commands the classifier proves read-only run in plan mode',
  off: 'no shell in plan mode',
};

export function statusBarTooltip(
  state: Pick<SessionState, 'mode' | 'permissionMode' | 'planStatus' | 'running' | 'planShell' | 'sandbox' | 'shellProtection' | 'planNetwork' | 'usage'> &
    Partial<Pick<SessionState, 'nextRequest'>>,
): string {
  const mode = state.mode === 'build' ? 'Build: edits and commands run, subject to permissions' : 'Plan: read-only research; only PLAN.md is written';
  const detail = permissionModeDetail(state.permissionMode);
  const lines = [`Plan LSP — ${mode}`, `Permissions: ${permissionModeLabel(state.permissionMode)}${detail ? ` — ${detail}` : ''}`];
  if (state.planShell) {
    const mechanism = state.planShell === 'sandboxed' && state.sandbox ? ` (${state.sandbox})` : '';
    lines.push(`Plan-mode shell: ${state.planShell}${mechanism} — ${SHELL_TOOLTIP[state.planShell] ?? ''}`);
    if (state.planNetwork) lines.push('Plan-mode shell may use the network (planLsp.planNetwork)');
  } else if (state.shellProtection) {
    lines.push(`Plan-mode shell: ${state.shellProtection}`);
  }
  lines.push(`Plan: ${state.planStatus}${state.running ? ' (agent running)' : ''}`);
  if (isUsage(state.usage)) lines.push(...usageTooltipLines(state.usage));
  const modeWord = (mode: string) => (mode === 'build' ? 'Build' : 'Plan');
  lines.push(`${state.running ? 'This run uses' : 'The next request runs in'}: ${modeWord(state.mode)} · ${permissionModeLabel(state.permissionMode)}`);
  const next = state.nextRequest;
  if (next) lines.push(`After the Do run, the next request runs in: ${modeWord(next.mode)} · ${permissionModeLabel(next.permissionMode)}`);
  lines.push(`Click, or ${MODE_KEY} in the chat, to toggle Plan/Build`);
  return lines.join('\n');
}
