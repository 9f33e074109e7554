/**
 * The chat view's state and its pure reducer. The extension host runs the same reducer to
 * keep the authoritative copy (so the view can be hidden, disposed and restored), and the
 * webview runs it to render. No DOM and no `vscode` here: tested in plain Node.
 */
import type {
  AskUserParams,
  PermissionOption,
  PlanLspUpdate,
  Question,
  RequestPermissionParams,
  SessionState,
  Todo,
} from '../wireTypes';
import { permissionOptions } from '../wireTypes';

export type ToolStatus = 'running' | 'waiting' | 'done' | 'failed' | 'blocked';

export type ChatItem =
  | { type: 'user'; id: number; text: string }
  | { type: 'assistant'; id: number; runId: string | null; text: string }
  | {
      type: 'tool';
      id: number;
      runId: string | null;
      callId: string | null;
      name: string;
      args: string;
      status: ToolStatus;
      reason?: string;
      result?: string;
    }
  | {
      type: 'permission';
      id: number;
      requestId: string;
      tool: string;
      summary: string;
      options: PermissionOption[];
      answer?: string;
    }
  | {
      type: 'question';
      id: number;
      requestId: string;
      questions: Question[];
      answers?: Record<string, string[]> | null;
    }
  | { type: 'planDraft'; id: number; runId: string | null; uri: string | null; chars: number | null }
  | { type: 'notice'; id: number; level: 'info' | 'error'; text: string };

export type ServerStatus = 'starting' | 'running' | 'stopped' | 'error';

export interface ChatState {
  session: SessionState | null;
  items: ChatItem[];
  nextId: number;
  running: boolean;
  runId: string | null;
  serverStatus: ServerStatus;
  serverMessage: string | null;
}

export type ChatEvent =
  | { type: 'update'; update: PlanLspUpdate }
  | { type: 'state'; state: SessionState }
  | { type: 'userPrompt'; text: string }
  | { type: 'promptEnded'; stopReason?: string; error?: string }
  | { type: 'permissionRequest'; requestId: string; params: RequestPermissionParams }
  | { type: 'permissionAnswered'; requestId: string; optionId: string }
  | { type: 'questionRequest'; requestId: string; params: AskUserParams }
  | { type: 'questionAnswered'; requestId: string; answers: Record<string, string[]> | null }
  | { type: 'serverStatus'; status: ServerStatus; message?: string }
  | { type: 'clear' }
  | { type: 'snapshot'; state: ChatState };

/** Bound on kept items so a long session cannot grow the view without limit. */
export const MAX_ITEMS = 400;

export function initialChatState(): ChatState {
  return {
    session: null,
    items: [],
    nextId: 1,
    running: false,
    runId: null,
    serverStatus: 'starting',
    serverMessage: null,
  };
}

type NewItem = ChatItem extends infer T ? (T extends ChatItem ? Omit<T, 'id'> : never) : never;

function append(state: ChatState, item: NewItem): ChatState {
  const items = [...state.items, { ...item, id: state.nextId } as ChatItem];
  return {
    ...state,
    items: items.length > MAX_ITEMS ? items.slice(items.length - MAX_ITEMS) : items,
    nextId: state.nextId + 1,
  };
}

function replaceAt(state: ChatState, index: number, item: ChatItem): ChatState {
  const items = state.items.slice();
  items[index] = item;
  return { ...state, items };
}

/** A non-empty string, else null (so `??` falls through empty fields). */
function str(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

function runIdOf(update: PlanLspUpdate): string | null {
  return str(update.runId);
}

function callIdOf(update: PlanLspUpdate): string | null {
  return str(update.toolCallId) ?? str(update.callId) ?? str(update.id);
}

function toolNameOf(update: PlanLspUpdate): string {
  return str(update.name) ?? str(update.tool) ?? str(update.toolName) ?? 'tool';
}

/** Pretty, bounded text for tool arguments and results. */
export function displayValue(value: unknown, limit = 2000): string {
  if (value === undefined || value === null) return '';
  const text = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  return text.length > limit ? `${text.slice(0, limit)}\n… (${text.length - limit} more characters)` : text;
}

function reasonOf(update: PlanLspUpdate): string {
  const reasons = update.reasons;
  if (Array.isArray(reasons) && reasons.length > 0) return reasons.map(String).join('; ');
  return str(update.reason) ?? str(update.message) ?? str(update.error) ?? 'not allowed';
}

/** The newest tool card matching the update: by call id, else by name among open cards. */
function findTool(state: ChatState, update: PlanLspUpdate, openOnly: boolean): number {
  const callId = callIdOf(update);
  const name = toolNameOf(update);
  for (let i = state.items.length - 1; i >= 0; i--) {
    const item = state.items[i];
    if (item.type !== 'tool') continue;
    if (callId !== null && item.callId !== null) {
      if (item.callId === callId) return i;
      continue;
    }
    if (item.name === name && (!openOnly || item.status === 'running' || item.status === 'waiting')) return i;
  }
  return -1;
}

function isToolNotAllowed(value: unknown): boolean {
  if (value && typeof value === 'object') return (value as Record<string, unknown>).error === 'tool_not_allowed';
  if (typeof value === 'string') {
    try {
      return isToolNotAllowed(JSON.parse(value));
    } catch {
      return false;
    }
  }
  return false;
}

/** Reducer for one `planLsp/update` notification. */
export function applyUpdate(state: ChatState, update: PlanLspUpdate): ChatState {
  const runId = runIdOf(update);
  switch (update.kind) {
    case 'text': {
      const delta = str(update.text) ?? str(update.delta) ?? '';
      if (!delta) return state;
      const last = state.items[state.items.length - 1];
      const running = { ...state, running: true, runId: runId ?? state.runId };
      if (last && last.type === 'assistant' && last.runId === runId) {
        return replaceAt(running, state.items.length - 1, { ...last, text: last.text + delta });
      }
      return append(running, { type: 'assistant', runId, text: delta });
    }
    case 'toolCall': {
      const args = displayValue(update.arguments ?? update.args ?? update.input);
      const index = findTool(state, update, true);
      const status: ToolStatus = update.status === 'waiting' ? 'waiting' : 'running';
      if (index >= 0 && callIdOf(update) !== null) {
        const item = state.items[index] as Extract<ChatItem, { type: 'tool' }>;
        return replaceAt(state, index, { ...item, args: args || item.args });
      }
      return append(
        { ...state, running: true, runId: runId ?? state.runId },
        { type: 'tool', runId, callId: callIdOf(update), name: toolNameOf(update), args, status },
      );
    }
    case 'toolResult': {
      const index = findTool(state, update, true);
      const raw = update.result ?? update.output ?? update.content ?? update.observation ?? update.error;
      const blocked = isToolNotAllowed(raw) || update.blocked === true;
      const failed = update.ok === false || update.isError === true || (update.error !== undefined && update.error !== null);
      const status: ToolStatus = blocked ? 'blocked' : failed ? 'failed' : 'done';
      if (index < 0) {
        return append(state, {
          type: 'tool', runId, callId: callIdOf(update), name: toolNameOf(update), args: '',
          status, result: displayValue(raw),
        });
      }
      const item = state.items[index] as Extract<ChatItem, { type: 'tool' }>;
      // A card already marked blocked keeps its reason; the result is the refusal itself.
      if (item.status === 'blocked') return replaceAt(state, index, { ...item, result: displayValue(raw) });
      return replaceAt(state, index, { ...item, status, result: displayValue(raw) });
    }
    case 'blocked': {
      const reason = reasonOf(update);
      const index = findTool(state, update, true);
      if (index < 0) {
        return append(state, {
          type: 'tool', runId, callId: callIdOf(update), name: toolNameOf(update),
          args: displayValue(update.arguments ?? update.args), status: 'blocked', reason,
        });
      }
      const item = state.items[index] as Extract<ChatItem, { type: 'tool' }>;
      return replaceAt(state, index, { ...item, status: 'blocked', reason });
    }
    case 'permission': {
      const index = findTool(state, update, true);
      if (index < 0) return state;
      const item = state.items[index] as Extract<ChatItem, { type: 'tool' }>;
      const decision = str(update.decision) ?? str(update.optionId);
      let status: ToolStatus = 'waiting';
      if (decision) status = decision.startsWith('reject') || decision === 'deny' ? 'blocked' : 'running';
      const reason = status === 'blocked' ? str(update.reason) ?? 'denied by the user' : item.reason;
      return replaceAt(state, index, { ...item, status, reason });
    }
    case 'planDraft': {
      const uri = str(update.uri) ?? str(update.planUri);
      const content = str(update.text) ?? str(update.content);
      const chars = typeof update.chars === 'number' ? update.chars : content !== null ? content.length : null;
      const existing = state.items.findIndex((i) => i.type === 'planDraft' && i.runId === runId);
      const session = state.session && state.session.planStatus === 'none'
        ? { ...state.session, planStatus: 'drafting' as const, planUri: uri ?? state.session.planUri }
        : state.session;
      if (existing >= 0) {
        const item = state.items[existing] as Extract<ChatItem, { type: 'planDraft' }>;
        return replaceAt({ ...state, session }, existing, { ...item, uri: uri ?? item.uri, chars: chars ?? item.chars });
      }
      return append({ ...state, session }, { type: 'planDraft', runId, uri, chars });
    }
    case 'modeChanged': {
      const embedded = update.state;
      let session = state.session;
      if (embedded && typeof embedded === 'object' && 'mode' in embedded) session = embedded as SessionState;
      else if (session) {
        session = { ...session };
        if (update.mode === 'plan' || update.mode === 'build') session.mode = update.mode;
        if (typeof update.permissionMode === 'string') session.permissionMode = update.permissionMode as SessionState['permissionMode'];
        if (typeof update.planStatus === 'string') session.planStatus = update.planStatus as SessionState['planStatus'];
      }
      const mode = str(update.mode) ?? session?.mode ?? null;
      const by = str(update.actor) ?? str(update.cause);
      const text = mode ? `Mode: ${mode === 'build' ? 'Build' : 'Plan'}${by ? ` (${by})` : ''}` : 'Mode changed';
      return append({ ...state, session }, { type: 'notice', level: 'info', text });
    }
    case 'todos': {
      if (!Array.isArray(update.todos) || !state.session) return state;
      return { ...state, session: { ...state.session, todos: update.todos as Todo[] } };
    }
    case 'done': {
      const stopReason = str(update.stopReason);
      const next = { ...state, running: false, runId: null };
      if (stopReason === 'plan_submitted') {
        return append(next, { type: 'notice', level: 'info', text: 'Plan submitted: review PLAN.md, then Approve or Reject.' });
      }
      if (stopReason && !['end_turn', 'completed', 'done', 'stop'].includes(stopReason)) {
        return append(next, { type: 'notice', level: 'info', text: `Run ended: ${stopReason}` });
      }
      return next;
    }
    case 'error': {
      const message = str(update.message) ?? str(update.error) ?? 'error';
      return append(state, { type: 'notice', level: 'error', text: message });
    }
    case 'deviation': {
      const message = str(update.message) ?? `${str(update.path) ?? 'a file'} changed outside the approved plan`;
      return append(state, { type: 'notice', level: 'error', text: message });
    }
    default:
      // `question` is shown by the interactive card of the planLsp/askUser request.
      return state;
  }
}

/** Reducer for everything the chat view reacts to. */
export function reduce(state: ChatState, event: ChatEvent): ChatState {
  switch (event.type) {
    case 'update':
      return applyUpdate(state, event.update);
    case 'state':
      return { ...state, session: event.state, running: event.state.running || (state.running && state.runId !== null) };
    case 'userPrompt':
      return append({ ...state, running: true }, { type: 'user', text: event.text });
    case 'promptEnded': {
      // Tool cards still open when the run ends did not finish.
      const items = state.items.map((i) =>
        i.type === 'tool' && (i.status === 'running' || i.status === 'waiting') ? { ...i, status: 'failed' as const, reason: 'run ended' } : i,
      );
      const next = { ...state, items, running: false, runId: null };
      if (event.error) return append(next, { type: 'notice', level: 'error', text: event.error });
      if (event.stopReason && event.stopReason === 'cancelled') return append(next, { type: 'notice', level: 'info', text: 'Stopped.' });
      return next;
    }
    case 'permissionRequest': {
      const { params } = event;
      let next = state;
      const toolIndex = findTool(state, { kind: 'permission', tool: params.tool, toolCallId: params.toolCallId } as PlanLspUpdate, true);
      if (toolIndex >= 0) {
        const item = state.items[toolIndex] as Extract<ChatItem, { type: 'tool' }>;
        next = replaceAt(state, toolIndex, { ...item, status: 'waiting' });
      }
      return append(next, {
        type: 'permission', requestId: event.requestId, tool: params.tool, summary: params.summary,
        options: permissionOptions(params),
      });
    }
    case 'permissionAnswered': {
      const index = state.items.findIndex((i) => i.type === 'permission' && i.requestId === event.requestId);
      if (index < 0) return state;
      const item = state.items[index] as Extract<ChatItem, { type: 'permission' }>;
      let next = replaceAt(state, index, { ...item, answer: event.optionId });
      const toolIndex = findTool(next, { kind: 'permission', tool: item.tool } as PlanLspUpdate, true);
      if (toolIndex >= 0) {
        const tool = next.items[toolIndex] as Extract<ChatItem, { type: 'tool' }>;
        const denied = event.optionId.startsWith('reject');
        next = replaceAt(next, toolIndex, {
          ...tool, status: denied ? 'blocked' : 'running', reason: denied ? 'denied by the user' : tool.reason,
        });
      }
      return next;
    }
    case 'questionRequest':
      return append(state, { type: 'question', requestId: event.requestId, questions: event.params.questions ?? [] });
    case 'questionAnswered': {
      const index = state.items.findIndex((i) => i.type === 'question' && i.requestId === event.requestId);
      if (index < 0) return state;
      const item = state.items[index] as Extract<ChatItem, { type: 'question' }>;
      return replaceAt(state, index, { ...item, answers: event.answers });
    }
    case 'serverStatus':
      return { ...state, serverStatus: event.status, serverMessage: event.message ?? null };
    case 'clear':
      return { ...state, items: [] };
    case 'snapshot':
      return event.state;
  }
}

/** Open permission/question cards: the ones the user still has to answer. */
export function pendingRequests(state: ChatState): string[] {
  return state.items.flatMap((i) =>
    (i.type === 'permission' && i.answer === undefined) || (i.type === 'question' && i.answers === undefined)
      ? [i.requestId]
      : [],
  );
}

export function todoProgress(todos: Todo[]): { done: number; total: number } {
  return { done: todos.filter((t) => t.status === 'completed').length, total: todos.length };
}
