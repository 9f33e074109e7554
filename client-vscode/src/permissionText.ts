/**
 * Permission modes and answers in the user's words. What each says is what the server does
 * (plan_lsp/policy/permissions.py): the mode's defaults for reads, edits inside the workspace
 * and other side effects (shell, network, MCP tools); and an "always" answer becomes a
 * session rule for this tool with exactly this path or command (`exact_rule`), an allow only
 * in the work mode it was given in, a deny in every mode, both until the session is cleared.
 * Pure: tested in Node, used by the status bar, the chat and the quick picks.
 */

export interface PermissionModeText {
  /** The name shown wherever a mode is chosen or shown. */
  label: string;
  /** One sentence: what asks and what does not. */
  detail: string;
}

export const PERMISSION_MODE_TEXT: Record<string, PermissionModeText> = {
  ask: {
    label: 'Ask before edits',
    detail: 'Reading runs freely; every edit, shell command and other side effect asks first.',
  },
  auto_edit: {
    label: 'Auto-accept edits',
    detail: 'Edits to files inside the workspace run without asking; shell commands and other side effects still ask.',
  },
  yolo: {
    label: 'Full auto (no questions)',
    detail: 'Everything the work mode allows runs without asking (your deny rules still hold).',
  },
  strict: {
    label: 'Ask before everything',
    detail: 'Even reading a file asks first, as do edits, shell commands and other side effects.',
  },
};

/** A permission mode's name for the user (an unknown mode keeps the server's word). */
export function permissionModeLabel(mode: string): string {
  return PERMISSION_MODE_TEXT[mode]?.label ?? mode;
}

export function permissionModeDetail(mode: string): string {
  return PERMISSION_MODE_TEXT[mode]?.detail ?? '';
}

/** The argument an "always" rule is matched on, per tool (PRIMARY_ARGUMENT on the server). */
const PRIMARY: Record<string, { key: string; kind: 'command' | 'path'; verb: string }> = {
  bash: { key: 'command', kind: 'command', verb: 'running' },
  read_file: { key: 'path', kind: 'path', verb: 'reading' },
  write_file: { key: 'path', kind: 'path', verb: 'writing' },
  edit_file: { key: 'path', kind: 'path', verb: 'edits to' },
  list_dir: { key: 'path', kind: 'path', verb: 'listing' },
  glob: { key: 'path', kind: 'path', verb: 'file searches in' },
  grep: { key: 'path', kind: 'path', verb: 'text searches in' },
};

/** At most this many characters of a command or path in a button's label. */
const SHOWN = 40;

function shorten(text: string): string {
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return oneLine.length <= SHOWN ? oneLine : `${oneLine.slice(0, SHOWN - 1)}…`;
}

function modeName(workMode: string | null | undefined): string | null {
  return workMode === 'build' ? 'Build' : workMode === 'plan' ? 'Plan' : null;
}

/** What an answer covers, in the call's terms: `edits to src/a.py`, `“git status”`,
 * `every mcp__x__y call`. */
function covered(tool: string, args: Record<string, unknown> | undefined): { short: string; exact: string } {
  const primary = PRIMARY[tool];
  if (!primary) return { short: `every ${tool} call`, exact: `every ${tool} call, whatever its arguments` };
  const raw = args?.[primary.key];
  const value = typeof raw === 'string' ? raw.trim() : '';
  if (primary.kind === 'command') {
    return {
      short: `“${shorten(value)}”`,
      exact: `the command “${value}” exactly (not another command, nor this one with more after it)`,
    };
  }
  const path = value || '.';
  return { short: `${primary.verb} ${shorten(path)}`, exact: `${tool} on exactly ${path} (not other files)` };
}

export interface AnswerText {
  label: string;
  /** The button's tooltip: exactly what the answer does. */
  title: string;
}

/** The words of a permission answer for this call. `workMode`: the session's work mode. */
export function permissionAnswerText(
  optionId: string,
  tool: string,
  args?: Record<string, unknown>,
  workMode?: string | null,
): AnswerText {
  const scope = covered(tool, args);
  const mode = modeName(workMode);
  switch (optionId) {
    case 'allow_once':
      return { label: 'Allow', title: 'Allow this call only; the next one asks again.' };
    case 'reject_once':
      return { label: 'Deny', title: 'Refuse this call only; the model is told it was denied.' };
    case 'allow_always':
      return {
        label: `Allow ${scope.short} for this session`,
        title:
          `Allow this call, and from now on ${scope.exact} without asking` +
          `${mode ? `, in ${mode} mode only` : ' in this work mode only'}, until a new session starts.`,
      };
    case 'reject_always':
      return {
        label: `Deny ${scope.short} for this session`,
        title: `Refuse this call, and from now on ${scope.exact} in every mode, until a new session starts.`,
      };
    default:
      return { label: optionId, title: '' };
  }
}
