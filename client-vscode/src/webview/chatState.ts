/**
 * The chat view's reducer. The extension host runs it to keep the authoritative copy (so the
 * view can be hidden, disposed and restored), and the webview runs it to render. No DOM and
 * no `vscode` here: tested in plain Node.
 *
 * The session (mode, plan status, todos, provider...) is only ever what the server pushed;
 * updates add conversation items and never patch it.
 */
import type { Todo } from '../wireTypes';
import { permissionOptions } from '../wireTypes';
import { ChatEvent, ChatItem, ChatState, append, replaceAt, str } from './chatTypes';
import { applyUpdate, findTool, isOpen, markPromptFailed, toolAt } from './updates';
import { applyCheckpointList } from './timeline';

export * from './chatTypes';
export { applyUpdate, displayValue, findTool, parseArguments } from './updates';
export type { ToolMatch } from './updates';

function closeOpenTools(items: ChatItem[], reason: string): ChatItem[] {
  return items.map((i) => (i.type === 'tool' && isOpen(i) ? { ...i, status: 'failed' as const, reason } : i));
}

/** Reducer for everything the chat view reacts to. */
export function reduce(state: ChatState, event: ChatEvent): ChatState {
  switch (event.type) {
    case 'update':
      return applyUpdate(state, event.update);
    case 'state':
      return { ...state, session: event.state };
    case 'history': {
      // The server's record replaces whatever this view had: after a reload it is the truth.
      let next: ChatState = { ...state, items: [], running: false, runId: null };
      for (const update of event.updates) {
        if (update && typeof update === 'object' && update.kind !== 'state') next = applyUpdate(next, update);
      }
      const live = next.session?.running === true;
      return { ...next, running: false, items: live ? next.items : closeOpenTools(next.items, 'run ended') };
    }
    case 'sessionCleared':
      return {
        ...state,
        session: event.state ?? state.session,
        items: [],
        running: false,
        runId: null,
        connection: { testing: false, result: null },
      };
    case 'userPrompt':
      return append(
        { ...state, running: true, connection: state.connection.result?.ok ? { testing: false, result: null } : state.connection },
        { type: 'user', runId: null, text: event.text, failed: false },
      );
    case 'promptEnded': {
      // Tool cards still open when the run ends did not finish.
      let next: ChatState = { ...state, items: closeOpenTools(state.items, 'run ended'), running: false, runId: null };
      if (event.error) {
        next = markPromptFailed(next, null);
        return append(next, { type: 'notice', level: 'error', text: event.error });
      }
      if (event.stopReason === 'cancelled') return append(next, { type: 'notice', level: 'info', text: 'Stopped.' });
      return next;
    }
    case 'permissionRequest': {
      const { params } = event;
      const runId = str(params.runId);
      let next = state;
      const toolIndex = findTool(state, runId, null, params.tool, 'open');
      if (toolIndex >= 0) next = replaceAt(state, toolIndex, { ...toolAt(state, toolIndex), status: 'waiting' });
      return append(next, {
        type: 'permission', requestId: event.requestId, runId, tool: params.tool, summary: params.summary,
        options: permissionOptions(params, state.session?.mode), path: event.path ?? null,
      });
    }
    case 'permissionAnswered': {
      const index = state.items.findIndex((i) => i.type === 'permission' && i.requestId === event.requestId);
      if (index < 0) return state;
      const item = state.items[index] as Extract<ChatItem, { type: 'permission' }>;
      let next = replaceAt(state, index, { ...item, answer: event.optionId });
      const toolIndex = findTool(next, item.runId, null, item.tool, 'open');
      if (toolIndex >= 0) {
        const tool = toolAt(next, toolIndex);
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
      return {
        ...state,
        serverStatus: event.status,
        serverMessage: event.message ?? null,
        startup: event.status === 'starting' ? state.startup : null,
        session: event.status === 'starting' ? null : state.session,
      };
    case 'startup':
      return {
        ...state,
        serverStatus: 'starting',
        startup: { step: event.step, detail: event.detail ?? null, progress: Math.max(0, Math.min(1, event.progress ?? 0)) },
      };
    case 'connectionTest':
      return { ...state, connection: { testing: event.testing, result: event.result } };
    case 'clientWarnings':
      return { ...state, clientWarnings: event.warnings };
    case 'setupChoice':
      return { ...state, setup: event.setup };
    case 'checkpointList':
      return applyCheckpointList(state, event.result);
    case 'snapshot':
      return event.state;
  }
}

/** Whether the agent is working: this window's prompt, or a run the server reports. */
export function isBusy(state: ChatState): boolean {
  return state.running || state.session?.running === true;
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

/** A button of the chat's plan panel. */
export interface PlanDecision {
  action: 'approve' | 'reject' | 'feedback';
  label: string;
  secondary: boolean;
}

/** What the chat offers on the plan — the server's code lens, as buttons. No decision while
 * a run is writing it; a submitted plan (or a draft the run left) is approved or rejected
 * (Reject… asks for feedback); a rejected plan stays approvable and revisable (Revise…
 * sends feedback): never a status without a way forward. */
export function planDecisions(state: ChatState): PlanDecision[] {
  const status = state.session?.planStatus ?? 'none';
  const busy = isBusy(state);
  const approve: PlanDecision = { action: 'approve', label: 'Approve', secondary: false };
  if (status === 'submitted' || (status === 'drafting' && !busy)) {
    return [approve, { action: 'reject', label: 'Reject…', secondary: true }];
  }
  if (status === 'rejected' && !busy) {
    return [approve, { action: 'feedback', label: 'Revise…', secondary: true }];
  }
  return [];
}

/** The plan panel: which file, its status and the decisions offered. A run that began a
 * draft in another file (the next round's PLAN-2.md), or again in a plan already decided,
 * shows "drafting" there at once, before the server's state says so; the panel never shows
 * the previous plan's status while the next one is written. Null: no plan. */
export interface PlanPanel {
  uri: string | null;
  status: string;
  decisions: PlanDecision[];
}

export function planPanel(state: ChatState): PlanPanel | null {
  const session = state.session;
  const draft = liveDraft(state);
  const status = session?.planStatus ?? 'none';
  const current = draft !== null && draft === session?.planUri && (status === 'drafting' || status === 'submitted');
  if (draft !== null && !current) return { uri: draft, status: 'drafting', decisions: [] };
  if (status === 'none') return null;
  return { uri: session?.planUri ?? null, status, decisions: planDecisions(state) };
}

/** The file the running run is drafting a plan into, or null. */
function liveDraft(state: ChatState): string | null {
  if (!isBusy(state)) return null;
  const runId = state.session?.runId ?? state.runId;
  if (!runId) return null;
  for (let i = state.items.length - 1; i >= 0; i--) {
    const item = state.items[i];
    if (item.type === 'planDraft' && item.runId === runId && item.uri) return item.uri;
  }
  return null;
}

/** The Todos panel: the Do run's list only. While a new plan is drafted, waits for a
 * decision or was rejected, the previous run's list (or one written while planning) is not
 * shown. */
export function visibleTodos(state: ChatState): Todo[] {
  const status = planPanel(state)?.status ?? 'none';
  return ['drafting', 'submitted', 'rejected'].includes(status) ? [] : state.session?.todos ?? [];
}

/** Whether a prompt can be sent: the server runs, no run is going, and a model is set up
 * (an older server that does not say which provider it uses is taken at its word). */
export function canSend(state: ChatState): boolean {
  const provider = state.session?.provider;
  return state.serverStatus === 'running' && !isBusy(state) && state.session !== null && (!provider || provider.configured);
}

/** The texts of the prompts `event` marked failed (not those a history or a snapshot
 * brings): the chat puts such a prompt back into the input, to edit or send again. */
export function newlyFailedPrompts(before: ChatState, after: ChatState, event: ChatEvent): string[] {
  if (event.type !== 'update' && event.type !== 'promptEnded') return [];
  const failedBefore = new Set(before.items.filter((i) => i.type === 'user' && i.failed).map((i) => i.id));
  return after.items.flatMap((i) => (i.type === 'user' && i.failed && !failedBefore.has(i.id) ? [i.text] : []));
}

/** The text of a failed prompt, for its Retry button (null: no such failed prompt). */
export function failedPromptText(state: ChatState, id: number): string | null {
  const item = state.items.find((i) => i.id === id);
  return item && item.type === 'user' && item.failed ? item.text : null;
}
