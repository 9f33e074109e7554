/**
 * The reducer for `planLsp/update` notifications: conversation items keyed by run and call.
 * The session itself is only ever what the server pushed; updates never patch it.
 */
import type { ErrorFix, PlanLspUpdate } from '../wireTypes';
import { ChatItem, ChatState, ToolItem, ToolStatus, append, replaceAt, str } from './chatTypes';
import { planFileName } from '../plansList';
import { applyCheckpointUpdate } from './timeline';

/** Pretty, bounded text for tool arguments and results. */
/** `beyond`: characters the server already left out after `value` (a cut tool result). */
export function displayValue(value: unknown, limit = 2000, beyond = 0): string {
  if (value === undefined || value === null) return '';
  const text = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  const more = Math.max(0, text.length - limit) + beyond;
  return more > 0 ? `${text.slice(0, limit)}\n… (${more.toLocaleString('en')} more characters)` : text;
}

/** Tool arguments arrive as JSON text (`toolCall`) or as an object (permission requests). */
export function parseArguments(value: unknown): Record<string, unknown> | null {
  if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  if (typeof value !== 'string') return null;
  try {
    const parsed: unknown = JSON.parse(value);
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

export function isOpen(item: ToolItem): boolean {
  return item.status === 'running' || item.status === 'waiting';
}

/** Which cards an update may land on: `open` ones (running or waiting for permission), or
 * `unresolved` ones (no result yet: a blocked call still gets its result). */
export type ToolMatch = 'open' | 'unresolved';

/**
 * The tool card an update is about: the newest card of the same run with the same call id
 * (or, without a call id, the same tool name). Providers that number call ids from zero in
 * every request reuse ids, across runs and within one, so a card from another run never
 * matches, and neither does a finished one.
 */
export function findTool(
  state: ChatState,
  runId: string | null,
  callId: string | null,
  name: string | null,
  match: ToolMatch,
): number {
  for (let i = state.items.length - 1; i >= 0; i--) {
    const item = state.items[i];
    if (item.type !== 'tool') continue;
    if (runId !== null && item.runId !== null && item.runId !== runId) continue;
    if (match === 'open' ? !isOpen(item) : item.result !== undefined) continue;
    if (callId !== null && item.callId !== null) {
      if (item.callId === callId) return i;
      continue;
    }
    if (name !== null && item.name === name) return i;
  }
  return -1;
}

export function toolAt(state: ChatState, index: number): ToolItem {
  return state.items[index] as ToolItem;
}

/** The newest user prompt, and whether the run it started has produced anything yet. */
function lastUserIndex(state: ChatState): number {
  for (let i = state.items.length - 1; i >= 0; i--) if (state.items[i].type === 'user') return i;
  return -1;
}

/** Gives the prompt this window sent the run id of the run it started. */
function attachRun(state: ChatState, runId: string | null): ChatState {
  if (runId === null || !state.running) return state;
  const index = lastUserIndex(state);
  if (index < 0) return state;
  const item = state.items[index] as Extract<ChatItem, { type: 'user' }>;
  if (item.runId !== null) return state;
  return replaceAt({ ...state, runId }, index, { ...item, runId });
}

function runAnswered(state: ChatState, runId: string | null): boolean {
  return state.items.some((i) => (i.type === 'assistant' || i.type === 'tool') && i.runId === runId);
}

/** A prompt whose run failed before the model answered is marked failed (the server does
 * not send it to the model again). */
export function markPromptFailed(state: ChatState, runId: string | null): ChatState {
  if (runAnswered(state, runId)) return state;
  for (let i = state.items.length - 1; i >= 0; i--) {
    const item = state.items[i];
    if (item.type !== 'user') continue;
    if (item.runId !== runId && item.runId !== null) return state;
    return replaceAt(state, i, { ...item, failed: true });
  }
  return state;
}

function reasonOf(update: PlanLspUpdate): string {
  return str(update.reason) ?? str(update.error) ?? 'not allowed';
}

function isFix(value: unknown): value is ErrorFix {
  if (!value || typeof value !== 'object') return false;
  const v = value as Record<string, unknown>;
  return typeof v.setting === 'string' || typeof v.command === 'string';
}

const CAUSES: Record<string, string> = {
  plan_approved: 'plan approved',
  permission_mode_changed: 'permission mode changed',
};

/** Reducer for one `planLsp/update` notification. */
const DECISIONS: Record<string, string> = {
  allow_once: 'Allowed once',
  allow_always: 'Allowed always',
  reject_once: 'Denied',
  reject_always: 'Denied always',
};

/** The user's answer, as the server tells it after the question: on the card the question
 * was asked on (live), else — a reload's history, or a client asked by a plain message — on a
 * card of its own; the tool's card follows either way. */
function permissionDecided(state: ChatState, runId: string | null, tool: string, summary: string, decision: string): ChatState {
  const denied = decision.startsWith('reject');
  let next = state;
  const asked = state.items.findIndex(
    (i) => i.type === 'permission' && i.runId === runId && i.tool === tool && i.answer !== undefined && !i.told,
  );
  if (asked >= 0) {
    next = replaceAt(state, asked, { ...(state.items[asked] as Extract<ChatItem, { type: 'permission' }>), told: true });
  } else {
    next = append(state, {
      type: 'permission', requestId: `told-${state.items.length}`, runId, tool, summary, path: null,
      options: [{ optionId: decision, label: DECISIONS[decision] ?? decision }], answer: decision, told: true,
    });
  }
  const index = findTool(next, runId, null, tool, 'open');
  if (index < 0) return next;
  const card = toolAt(next, index);
  return replaceAt(next, index, { ...card, status: denied ? 'blocked' : 'running', reason: denied ? 'denied by the user' : card.reason });
}

export function applyUpdate(state: ChatState, update: PlanLspUpdate): ChatState {
  const runId = str(update.runId);
  const callId = str(update.toolCallId);
  const tool = str(update.tool);
  switch (update.kind) {
    case 'prompt': {
      // The server's record of a user prompt (history). A live echo of this window's own
      // prompt only gives that prompt its run.
      const text = str(update.text) ?? '';
      const failed = update.status === 'failed';
      const index = lastUserIndex(state);
      const last = index >= 0 ? (state.items[index] as Extract<ChatItem, { type: 'user' }>) : null;
      if (last && last.runId === null && last.text === text && index === state.items.length - 1) {
        return replaceAt(state, index, { ...last, runId, failed: last.failed || failed });
      }
      return append(state, { type: 'user', runId, text, failed });
    }
    case 'text': {
      const delta = str(update.delta) ?? '';
      if (!delta) return state;
      const next = attachRun(state, runId);
      const last = next.items[next.items.length - 1];
      if (last && last.type === 'assistant' && last.runId === runId) {
        return replaceAt(next, next.items.length - 1, { ...last, text: last.text + delta });
      }
      return append(next, { type: 'assistant', runId, text: delta });
    }
    case 'toolCall': {
      const next = attachRun(state, runId);
      const args = displayValue(update.arguments);
      const input = parseArguments(update.arguments);
      const index = callId !== null ? findTool(next, runId, callId, null, 'open') : -1;
      if (index >= 0) {
        const item = toolAt(next, index);
        return replaceAt(next, index, { ...item, args: args || item.args, input: input ?? item.input });
      }
      // A run's todo list is one card, updated in place by each todo_write.
      const todos = tool === 'todo_write' && runId !== null
        ? next.items.findIndex((i) => i.type === 'tool' && i.name === 'todo_write' && i.runId === runId)
        : -1;
      if (todos >= 0) {
        const { reason: _reason, result: _result, ...item } = toolAt(next, todos);
        return replaceAt(next, todos, { ...item, callId, args, input, status: 'running' });
      }
      return append(next, { type: 'tool', runId, callId, name: tool ?? 'tool', args, input, status: 'running' });
    }
    case 'toolResult': {
      const index = findTool(state, runId, callId, tool, 'unresolved');
      const omitted = typeof update.omitted === 'number' && update.omitted > 0 ? update.omitted : 0;
      const content = displayValue(update.content, 2000, omitted);
      const status: ToolStatus = update.isError === true ? 'failed' : 'done';
      if (index < 0) {
        return append(state, {
          type: 'tool', runId, callId, name: tool ?? 'tool', args: '', input: null, status, result: content,
        });
      }
      const item = toolAt(state, index);
      // A card already marked blocked keeps its reason; the result is the refusal itself.
      return replaceAt(state, index, { ...item, status: item.status === 'blocked' ? 'blocked' : status, result: content });
    }
    case 'blocked': {
      const reason = reasonOf(update);
      const index = findTool(state, runId, callId, tool, 'unresolved');
      if (index < 0) {
        return append(state, {
          type: 'tool', runId, callId, name: tool ?? 'tool', args: '', input: null, status: 'blocked', reason,
        });
      }
      return replaceAt(state, index, { ...toolAt(state, index), status: 'blocked', reason });
    }
    case 'permission': {
      const decision = str(update.decision);
      if (decision !== null) return permissionDecided(state, runId, tool ?? 'tool', str(update.summary) ?? '', decision);
      // The server asks the user about the newest open call of this tool in the run.
      const index = findTool(state, runId, null, tool, 'open');
      if (index < 0) return state;
      return replaceAt(state, index, { ...toolAt(state, index), status: 'waiting' });
    }
    case 'cancelledCalls': {
      let next = state;
      for (const call of Array.isArray(update.calls) ? update.calls : []) {
        if (!call || typeof call !== 'object') continue;
        const c = call as Record<string, unknown>;
        const index = findTool(next, str(c.runId), str(c.callId), str(c.tool), 'open');
        if (index >= 0) {
          next = replaceAt(next, index, { ...toolAt(next, index), status: 'failed', reason: 'cancelled: switched to Plan mode' });
        }
      }
      return next;
    }
    case 'planDraft': {
      const uri = str(update.uri);
      const chars = typeof update.chars === 'number' ? update.chars : null;
      const existing = state.items.findIndex((i) => i.type === 'planDraft' && i.runId === runId);
      if (existing >= 0) {
        const item = state.items[existing] as Extract<ChatItem, { type: 'planDraft' }>;
        return replaceAt(state, existing, { ...item, uri: uri ?? item.uri, chars: chars ?? item.chars });
      }
      return append(attachRun(state, runId), { type: 'planDraft', runId, uri, chars });
    }
    case 'modeChanged': {
      const mode = str(update.mode);
      if (mode !== 'plan' && mode !== 'build') return state;
      const cause = CAUSES[str(update.cause) ?? ''];
      const text = `Mode: ${mode === 'build' ? 'Build' : 'Plan'}${cause ? ` (${cause})` : ''}`;
      const last = state.items[state.items.length - 1];
      if (last && last.type === 'notice' && last.text === text) return state;
      return append(state, { type: 'notice', level: 'info', text });
    }
    case 'done': {
      const stopReason = str(update.stopReason);
      let next: ChatState = { ...state, runId: null };
      if (stopReason === 'error') next = markPromptFailed(next, runId);
      if (stopReason === 'plan_submitted') {
        // The file this run's draft went to (each planning round has its own: PLAN-2.md, …).
        const draft = [...state.items].reverse().find((i) => i.type === 'planDraft' && i.runId === runId);
        const uri = draft && draft.type === 'planDraft' ? draft.uri : null;
        const file = uri ? planFileName(uri) : 'PLAN.md';
        return append(next, { type: 'notice', level: 'info', text: `Plan submitted: review ${file}, then Approve or Reject.` });
      }
      if (stopReason && !['end_turn', 'error'].includes(stopReason)) {
        return append(next, { type: 'notice', level: 'info', text: `Run ended: ${stopReason}` });
      }
      return next;
    }
    case 'error': {
      const message = str(update.message) ?? 'error';
      const code = str(update.code);
      // The server says whether the prompt never reached the model (`failedPrompt`).
      const failedPrompt = typeof update.failedPrompt === 'boolean' ? update.failedPrompt : code !== null;
      const next = failedPrompt ? markPromptFailed(attachRun(state, runId), runId) : state;
      return append(next, {
        type: 'notice', level: 'error', text: message,
        ...(code !== null ? { code } : {}),
        ...(isFix(update.fix) ? { fix: update.fix } : {}),
        // A run the model server failed after some steps: Retry goes on from the last one.
        ...(update.retry === true && !failedPrompt ? { retryRun: true } : {}),
      });
    }
    case 'compaction': {
      // The conversation before it was summarised: a card with the numbers and the summary.
      const num = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) ? value : 0);
      return append(state, {
        type: 'compaction',
        runId,
        trigger: update.trigger === 'auto' ? 'auto' : 'manual',
        summary: typeof update.summary === 'string' ? update.summary : '',
        prunedOutputs: num(update.prunedOutputs),
        tokensBefore: num(update.tokensBefore),
        tokensAfter: num(update.tokensAfter),
      });
    }
    case 'deviation': {
      const message = str(update.message) ?? `${str(update.path) ?? 'a file'} changed outside the approved plan`;
      return append(state, { type: 'notice', level: 'error', text: message });
    }
    case 'checkpoint':
      return applyCheckpointUpdate(state, update);
    default:
      // `state` is handled by the session; `question` is shown by the planLsp/askUser card;
      // `todos` are part of the pushed state.
      return state;
  }
}
