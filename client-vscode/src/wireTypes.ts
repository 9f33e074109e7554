/**
 * plan-lsp wire types and helpers on them. The contract's types are generated from the
 * server's models (`protocol.generated.ts`, docs/protocol.md) and re-exported here; what is
 * defined here is the client's own: how it reads what a server sends (leniently: updates of
 * kinds it does not know, a server older than 0.2), its names for contract types, and helpers.
 * Type-only and import-free at run time, so the webview bundle can use it without pulling in
 * the JSON-RPC library.
 */

import type * as Wire from './protocol.generated';
import { AnswerText, permissionAnswerText } from './permissionText';

/** Every type of the contract, by its name in docs/protocol.md. */
export type * as Wire from './protocol.generated';

export type {
  AskUserResult,
  ApprovedPlan,
  CompactionUpdate,
  ErrorCode,
  FixSetting,
  McpServerStatus,
  Outcome,
  PermissionMode,
  PlanStatus,
  PromptResult,
  SessionUsage,
  StopReason,
  Todo,
  Update,
  UpdateKind,
  WorkMode,
} from './protocol.generated';

export const PERMISSION_MODES: readonly Wire.PermissionMode[] = ['ask', 'auto_edit', 'yolo', 'strict'];

export type CompactionTrigger = Wire.CompactionUpdate['trigger'];

/** `SessionState.planShell` (null while the server's sandbox self-test runs). */
export type PlanShell = 'sandboxed' | 'classified' | 'off';

/** `SessionState.provider`: what the server will talk to (never the key). */
export type ProviderStatus = Wire.ProviderInfo;

/** The fields every server sends in `SessionState`. */
type CoreState = 'sessionId' | 'mode' | 'permissionMode' | 'planUri' | 'planStatus' | 'outcome' | 'todos' | 'running';

/** `SessionState` as the client reads it: the contract's (`Wire.SessionState`), with the
 * fields after `running` optional only because a server older than 0.2 does not send them
 * (and `usage` one without long-session support); nothing reads them without checking. */
export type SessionState = Pick<Wire.SessionState, CoreState> & Partial<Omit<Wire.SessionState, CoreState>>;

/** `planLsp/testConnection`'s answer as the client reads it (`Wire.TestConnectionResult`): a
 * code it does not know is kept, and the client makes one without `fix` itself when the
 * request fails. */
export type TestConnectionResult = Omit<Wire.TestConnectionResult, 'code' | 'fix'> & {
  code: Wire.ErrorCode | string | null;
  fix?: ErrorFix | null;
};

/** `fix` of an error or a connection test (`Wire.ErrorFix`): the setting that fixes it, or a
 * command of the client's own. */
export type ErrorFix = Wire.ErrorFix & { command?: string };

/** `planLsp/history` as the client reads it. */
export interface HistoryResult {
  updates: PlanLspUpdate[];
}

/** `planLsp/update` params as the client reads them: `{runId, kind, ...}`, the rest depending
 * on the kind (`Update` is the contract's union); a kind this client does not know is kept. */
export interface PlanLspUpdate {
  runId?: string | null;
  kind: Wire.UpdateKind | string;
  [field: string]: unknown;
}

export type PermissionOptionId = Wire.PermissionAnswer;
export const PERMISSION_OPTION_IDS: readonly PermissionOptionId[] = [
  'allow_once',
  'allow_always',
  'reject_once',
  'reject_always',
];

export interface PermissionOption {
  optionId: string;
  label: string;
  /** What the answer does, exactly (the button's tooltip). */
  title?: string;
}

/** `planLsp/requestPermission` params as the client reads them: the contract's
 * (`Wire.RequestPermissionParams`), with `options` either option ids or objects carrying an
 * `optionId` (and maybe a `name`/`label`), and any part but the tool and summary missing. */
export type RequestPermissionParams = Pick<Wire.RequestPermissionParams, 'tool' | 'summary'> & {
  runId?: string | null;
  /** The call's arguments (for an edit: the path and the proposed text). */
  arguments?: Record<string, unknown>;
  options?: unknown[];
  /** An edit's texts before and after, as the server computed them (absent: no diff). */
  change?: Wire.PermissionChange | null;
};

/** The answer: one of the offered option ids (`Wire.RequestPermissionResult`; the client
 * answers with the id the server offered, whatever it is). */
export interface RequestPermissionResult {
  optionId: string;
}

/** A question of `planLsp/askUser` (`multiple` may be left out: false). */
export type Question = Omit<Wire.Question, 'multiple'> & { multiple?: boolean };

/** `planLsp/askUser` params as the client reads them (`runId` may be missing). */
export interface AskUserParams {
  runId?: string | null;
  questions: Question[];
}

export type ApprovePlanArgs = Wire.ApproveParams;
export type RejectPlanArgs = Wire.RejectParams;

/** Normalises the server's `options` (ids or objects) to `{optionId, label, title}` in its
 * order, labelled for this call (permissionText.ts: what an "always" answer covers).
 * `workMode`: the session's, for the tooltip of "Allow … for this session". */
export function permissionOptions(params: RequestPermissionParams, workMode?: string | null): PermissionOption[] {
  const raw = Array.isArray(params.options) && params.options.length > 0
    ? params.options
    : [...PERMISSION_OPTION_IDS];
  const text = (id: string): AnswerText => permissionAnswerText(id, params.tool, params.arguments, workMode);
  const result: PermissionOption[] = [];
  for (const item of raw) {
    if (typeof item === 'string') {
      result.push({ optionId: item, ...text(item) });
    } else if (item && typeof item === 'object') {
      const o = item as Record<string, unknown>;
      const id = typeof o.optionId === 'string' ? o.optionId : typeof o.id === 'string' ? o.id : undefined;
      if (!id) continue;
      const own = typeof o.label === 'string' ? o.label : typeof o.name === 'string' ? o.name : undefined;
      result.push({ optionId: id, ...text(id), ...(own !== undefined ? { label: own } : {}) });
    }
  }
  return result;
}

/** The answer when the user dismisses a permission prompt: deny this one call. */
export const DISMISSED_PERMISSION: RequestPermissionResult = { optionId: 'reject_once' };

