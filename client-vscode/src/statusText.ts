/** The status bar's text and tooltip for a session state (pure, tested in Node). */
import type { SessionState } from './protocol';

const PERMISSION_LABELS: Record<string, string> = {
  ask: 'ask',
  auto_edit: 'auto-edit',
  yolo: 'yolo',
  strict: 'strict',
};

export function statusBarText(state: Pick<SessionState, 'mode' | 'permissionMode'>): string {
  const mode = state.mode === 'build' ? '$(tools) Build' : '$(eye) Plan';
  return `${mode} · ${PERMISSION_LABELS[state.permissionMode] ?? state.permissionMode}`;
}

export function statusBarTooltip(state: Pick<SessionState, 'mode' | 'permissionMode' | 'planStatus' | 'running'>): string {
  const mode = state.mode === 'build' ? 'Build: edits and commands run, subject to permissions' : 'Plan: read-only research; only PLAN.md is written';
  return [
    `Plan LSP — ${mode}`,
    `Permission mode: ${state.permissionMode}`,
    `Plan: ${state.planStatus}${state.running ? ' (agent running)' : ''}`,
    'Click to toggle Plan/Build',
  ].join('\n');
}
