/**
 * The chat view's state: its items, the events it reacts to, and the small immutable
 * operations the reducers share. No DOM and no `vscode`: tested in plain Node.
 */
import type {
  AskUserParams,
  ErrorFix,
  PermissionOption,
  PlanLspUpdate,
  Question,
  RequestPermissionParams,
  SessionState,
  TestConnectionResult,
} from '../wireTypes';
import type { CheckpointListEvent, TimelineItem } from './timeline';

export type ToolStatus = 'running' | 'waiting' | 'done' | 'failed' | 'blocked';

export type ToolItem = {
  type: 'tool';
  id: number;
  runId: string | null;
  callId: string | null;
  name: string;
  /** The arguments as received (JSON text), for display. */
  args: string;
  /** The arguments parsed, when they are a JSON object. */
  input: Record<string, unknown> | null;
  status: ToolStatus;
  reason?: string;
  result?: string;
};

export type ChatItem =
  | { type: 'user'; id: number; runId: string | null; text: string; failed: boolean }
  | { type: 'assistant'; id: number; runId: string | null; text: string }
  | ToolItem
  | {
      type: 'permission';
      id: number;
      requestId: string;
      runId: string | null;
      tool: string;
      summary: string;
      options: PermissionOption[];
      /** The edited file, when the request is an edit whose change can be previewed. */
      path: string | null;
      answer?: string;
      /** The server has told this answer (a `permission` update with its `decision`). */
      told?: boolean;
    }
  | {
      type: 'question';
      id: number;
      requestId: string;
      questions: Question[];
      answers?: Record<string, string[]> | null;
    }
  | { type: 'planDraft'; id: number; runId: string | null; uri: string | null; chars: number | null }
  | {
      type: 'compaction';
      id: number;
      runId: string | null;
      trigger: 'auto' | 'manual';
      summary: string;
      prunedOutputs: number;
      tokensBefore: number;
      tokensAfter: number;
    }
  | { type: 'notice'; id: number; level: 'info' | 'error'; text: string; code?: string; fix?: ErrorFix; retryRun?: boolean }
  /** The Do run's checkpoints, one card per run (timeline.ts). */
  | TimelineItem;

export type ServerStatus = 'starting' | 'running' | 'stopped' | 'error';

/** What the first-run start-up is doing (shown while the server is not running yet). */
/** `install`: from the wheels the extension carries (no download); `download`: from the package
 * index (the bundled wheels do not fit this Python). */
export type StartupStep = 'probe' | 'venv' | 'install' | 'download' | 'launch';

export interface Startup {
  step: StartupStep;
  detail: string | null;
  /** 0..1 */
  progress: number;
}

export interface ConnectionCheck {
  testing: boolean;
  result: TestConnectionResult | null;
}

export interface ChatState {
  session: SessionState | null;
  items: ChatItem[];
  nextId: number;
  /** A prompt sent from this window is waiting for its run to end. */
  running: boolean;
  runId: string | null;
  serverStatus: ServerStatus;
  serverMessage: string | null;
  startup: Startup | null;
  connection: ConnectionCheck;
  /** Warnings of the client itself (e.g. workspace settings it ignored). */
  clientWarnings: string[];
  /** What the user set up (null: not known yet): whether they chose a model server in the
   * settings, and whether an API key is stored. */
  setup: SetupChoice | null;
}

export interface SetupChoice {
  chosen: boolean;
  keySet: boolean;
}

export type ChatEvent =
  | { type: 'update'; update: PlanLspUpdate }
  | { type: 'state'; state: SessionState }
  | { type: 'history'; updates: PlanLspUpdate[] }
  | { type: 'sessionCleared'; state: SessionState | null }
  | { type: 'userPrompt'; text: string }
  | { type: 'promptEnded'; stopReason?: string; error?: string }
  | { type: 'permissionRequest'; requestId: string; params: RequestPermissionParams; path?: string | null }
  | { type: 'permissionAnswered'; requestId: string; optionId: string }
  | { type: 'questionRequest'; requestId: string; params: AskUserParams }
  | { type: 'questionAnswered'; requestId: string; answers: Record<string, string[]> | null }
  | { type: 'serverStatus'; status: ServerStatus; message?: string }
  | { type: 'startup'; step: StartupStep; detail?: string | null; progress?: number }
  | { type: 'connectionTest'; result: TestConnectionResult | null; testing: boolean }
  | { type: 'clientWarnings'; warnings: string[] }
  | { type: 'setupChoice'; setup: SetupChoice }
  | CheckpointListEvent
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
    startup: null,
    connection: { testing: false, result: null },
    clientWarnings: [],
    setup: null,
  };
}

export type NewItem = ChatItem extends infer T ? (T extends ChatItem ? Omit<T, 'id'> : never) : never;

export function append(state: ChatState, item: NewItem): ChatState {
  const items = [...state.items, { ...item, id: state.nextId } as ChatItem];
  return {
    ...state,
    items: items.length > MAX_ITEMS ? items.slice(items.length - MAX_ITEMS) : items,
    nextId: state.nextId + 1,
  };
}

export function replaceAt(state: ChatState, index: number, item: ChatItem): ChatState {
  const items = state.items.slice();
  items[index] = item;
  return { ...state, items };
}

/** A non-empty string, else null (so `??` falls through empty fields). */
export function str(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}
