/**
 * plan-lsp wire types (DESIGN.md §7) and helpers on them; no imports, so the webview
 * bundle can use them without pulling in the JSON-RPC library.
 */

export type WorkMode = 'plan' | 'build';
export type PermissionMode = 'ask' | 'auto_edit' | 'yolo' | 'strict';
export type PlanStatus = 'none' | 'drafting' | 'submitted' | 'approved' | 'rejected';
export type Outcome =
  | 'never_planned'
  | 'planning_with_plan'
  | 'planning_without_plan'
  | 'completed';

export const PERMISSION_MODES: readonly PermissionMode[] = ['ask', 'auto_edit', 'yolo', 'strict'];

export interface Todo {
  content: string;
  status: 'pending' | 'in_progress' | 'completed';
}

export type PlanShell = 'sandboxed' | 'classified' | 'off';

export interface ApprovedPlan {
  path: string;
  text: string;
  sha256: string;
  time: string;
}

/** `SessionState.provider`: what the server will talk to (never the key). */
export interface ProviderStatus {
  name: string;
  /** null: no model set and the provider has no default (a local server). */
  model: string | null;
  /** null: the provider's own endpoint. */
  baseUrl: string | null;
  configured: boolean;
  problem: string | null;
}

export interface McpServerStatus {
  name: string;
  status: 'configured' | 'starting' | 'ready' | 'failed';
  error: string | null;
  tools: string[];
}

/** `SessionState.usage`: the session's token accounting. `contextTokens` is the size of the last
 * request sent (as the provider reported it, else estimated) against `contextWindow`; the token
 * totals are the sums of what providers reported; `costUsd` is null unless a price is set. */
export interface SessionUsage {
  contextTokens: number;
  contextWindow: number;
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
  costUsd: number | null;
  compactions: number;
}

/** `SessionState` as pushed by the server (`planLsp/update {kind: "state"}`, docs/architecture.md
 * 0.2). The fields after `running` are optional here only because a server older than 0.2 does
 * not send them; nothing reads them without checking. */
export interface SessionState {
  sessionId: string;
  mode: WorkMode;
  permissionMode: PermissionMode;
  planUri: string | null;
  planStatus: PlanStatus;
  outcome: Outcome;
  todos: Todo[];
  running: boolean;
  runId?: string | null;
  approvedPlan?: ApprovedPlan | null;
  shellProtection?: string | null;
  /** null while the server's sandbox self-test runs (the state is pushed when it answers). */
  planShell?: PlanShell | null;
  sandbox?: 'bubblewrap' | 'landlock' | null;
  planNetwork?: boolean;
  provider?: ProviderStatus;
  mcpServers?: McpServerStatus[];
  configWarnings?: string[];
  /** Always sent by a server with long-session support; absent from older ones. */
  usage?: SessionUsage;
}

/** Error codes of `planLsp/update {kind: "error"}` the user can fix. */
export type ErrorCode =
  | 'provider_unconfigured'
  | 'provider_unreachable'
  | 'provider_auth'
  | 'provider_model'
  | 'provider_no_tools'
  | 'provider_rate_limited'
  | 'provider_failed';

export type FixSetting = 'baseUrl' | 'model' | 'provider' | 'apiKey';

/** `fix` of an error update: the setting or the command that fixes it. */
export interface ErrorFix {
  setting?: FixSetting;
  command?: string;
}

export interface TestConnectionResult {
  ok: boolean;
  code: string | null;
  message: string;
  fix?: ErrorFix | null;
}

export interface HistoryResult {
  updates: PlanLspUpdate[];
}

export type UpdateKind =
  | 'text'
  | 'toolCall'
  | 'toolResult'
  | 'blocked'
  | 'planDraft'
  | 'modeChanged'
  | 'todos'
  | 'question'
  | 'permission'
  | 'done'
  | 'error'
  | 'deviation'
  | 'state'
  | 'cancelledCalls'
  | 'prompt'
  | 'compaction';

/** `planLsp/update` params: `{runId, kind, ...}`; the rest depends on the kind. */
export interface PlanLspUpdate {
  runId?: string | null;
  kind: UpdateKind | string;
  [field: string]: unknown;
}

export type CompactionTrigger = 'auto' | 'manual';

/** `planLsp/update {kind: "compaction"}`: the conversation was summarised and old tool outputs
 * pruned; the `state` update with the new usage follows it. */
export interface CompactionUpdate {
  runId: string | null;
  kind: 'compaction';
  trigger: CompactionTrigger;
  summary: string;
  prunedOutputs: number;
  tokensBefore: number;
  tokensAfter: number;
}

export type PermissionOptionId = 'allow_once' | 'allow_always' | 'reject_once' | 'reject_always';
export const PERMISSION_OPTION_IDS: readonly PermissionOptionId[] = [
  'allow_once',
  'allow_always',
  'reject_once',
  'reject_always',
];

export interface PermissionOption {
  optionId: string;
  label: string;
}

export interface RequestPermissionParams {
  runId?: string | null;
  tool: string;
  summary: string;
  /** The call's arguments (for an edit: the path and the proposed text). */
  arguments?: Record<string, unknown>;
  /** Either option ids or objects carrying an `optionId` (and maybe a `name`/`label`). */
  options?: unknown[];
}

export interface RequestPermissionResult {
  optionId: string;
}

export interface Question {
  id: string;
  text: string;
  options: string[];
  multiple?: boolean;
}

export interface AskUserParams {
  runId?: string | null;
  questions: Question[];
}

export interface AskUserResult {
  answers: Record<string, string[]>;
}

export interface PromptResult {
  runId: string;
  stopReason: string;
}

export interface ApprovePlanArgs {
  workspaceUri?: string;
  /** The plan document approved, and the sha256 of the text the user had in front of them:
   * the server refuses another document, or a plan that changed since. */
  planUri?: string;
  sha256?: string;
  permissionMode?: 'ask' | 'auto_edit';
  clearContext?: boolean;
  execute?: boolean;
}

export interface RejectPlanArgs {
  workspaceUri?: string;
  feedback?: string;
}

const OPTION_LABELS: Record<string, string> = {
  allow_once: 'Allow once',
  allow_always: 'Allow always',
  reject_once: 'Deny',
  reject_always: 'Deny always',
};

/** Normalises the server's `options` (ids or objects) to `{optionId, label}` in its order. */
export function permissionOptions(params: RequestPermissionParams): PermissionOption[] {
  const raw = Array.isArray(params.options) && params.options.length > 0
    ? params.options
    : [...PERMISSION_OPTION_IDS];
  const result: PermissionOption[] = [];
  for (const item of raw) {
    if (typeof item === 'string') {
      result.push({ optionId: item, label: OPTION_LABELS[item] ?? item });
    } else if (item && typeof item === 'object') {
      const o = item as Record<string, unknown>;
      const id = typeof o.optionId === 'string' ? o.optionId : typeof o.id === 'string' ? o.id : undefined;
      if (!id) continue;
      const label = typeof o.label === 'string' ? o.label : typeof o.name === 'string' ? o.name : OPTION_LABELS[id] ?? id;
      result.push({ optionId: id, label });
    }
  }
  return result;
}

/** The answer when the user dismisses a permission prompt: deny this one call. */
export const DISMISSED_PERMISSION: RequestPermissionResult = { optionId: 'reject_once' };

