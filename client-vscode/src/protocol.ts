/**
 * The plan-lsp wire contract (DESIGN.md §6–§7) as typed JSON-RPC messages, and the
 * client-side session logic that sits on any JSON-RPC endpoint. Nothing here imports
 * `vscode`, so the protocol layer runs (and is tested) in plain Node.
 */
import {
  CancellationToken,
  NotificationType,
  RequestType,
} from 'vscode-jsonrpc';

export * from './wireTypes';
import type {
  ApprovePlanArgs,
  AskUserParams,
  AskUserResult,
  PermissionMode,
  PlanLspUpdate,
  PromptResult,
  RejectPlanArgs,
  RequestPermissionParams,
  RequestPermissionResult,
  SessionState,
  Todo,
  WorkMode,
} from './wireTypes';
import { DISMISSED_PERMISSION } from './wireTypes';

export const Methods = {
  state: new RequestType<Record<string, never>, SessionState, void>('planLsp/state'),
  setMode: new RequestType<{ mode: WorkMode }, SessionState, void>('planLsp/setMode'),
  toggleMode: new RequestType<Record<string, never>, SessionState, void>('planLsp/toggleMode'),
  setPermissionMode: new RequestType<{ permissionMode: PermissionMode }, SessionState, void>(
    'planLsp/setPermissionMode',
  ),
  prompt: new RequestType<{ text: string }, PromptResult, void>('planLsp/prompt'),
  cancel: new RequestType<{ runId?: string }, Record<string, never>, void>('planLsp/cancel'),
  approvePlan: new RequestType<ApprovePlanArgs, SessionState, void>('planLsp/approvePlan'),
  rejectPlan: new RequestType<RejectPlanArgs, SessionState, void>('planLsp/rejectPlan'),
  update: new NotificationType<PlanLspUpdate>('planLsp/update'),
  requestPermission: new RequestType<RequestPermissionParams, RequestPermissionResult, void>(
    'planLsp/requestPermission',
  ),
  askUser: new RequestType<AskUserParams, AskUserResult, void>('planLsp/askUser'),
  executeCommand: new RequestType<{ command: string; arguments?: unknown[] }, unknown, void>(
    'workspace/executeCommand',
  ),
} as const;

/** Server command ids (DESIGN.md §6), run through `workspace/executeCommand`. */
export const ServerCommands = {
  approvePlan: 'planLsp.approvePlan',
  rejectPlan: 'planLsp.rejectPlan',
  toggleMode: 'planLsp.toggleMode',
} as const;

/** What this client declares under `capabilities.experimental.planLsp`. */
export const CLIENT_EXPERIMENTAL_CAPABILITIES = {
  permissionRequests: true,
  questions: true,
} as const;

export function fillPlanLspCapabilities(capabilities: { experimental?: unknown }): void {
  const experimental =
    capabilities.experimental && typeof capabilities.experimental === 'object'
      ? (capabilities.experimental as Record<string, unknown>)
      : {};
  capabilities.experimental = { ...experimental, planLsp: { ...CLIENT_EXPERIMENTAL_CAPABILITIES } };
}

/** The part of a JSON-RPC connection the session needs; both vscode-languageclient's
 * `LanguageClient` and vscode-jsonrpc's `MessageConnection` provide it. */
export interface RpcEndpoint {
  sendRequest<P, R, E>(type: RequestType<P, R, E>, params: P, token?: CancellationToken): Promise<R>;
  onNotification<P>(type: NotificationType<P>, handler: (params: P) => void): { dispose(): void };
  onRequest<P, R, E>(
    type: RequestType<P, R, E>,
    handler: (params: P, token: CancellationToken) => Promise<R> | R,
  ): { dispose(): void };
}

/** What the session needs from the user interface. */
export interface SessionUi {
  onUpdate(update: PlanLspUpdate): void;
  onState(state: SessionState): void;
  askPermission(params: RequestPermissionParams, token: CancellationToken): Promise<RequestPermissionResult>;
  askUser(params: AskUserParams, token: CancellationToken): Promise<AskUserResult>;
  onError?(message: string): void;
}

/**
 * One client-side plan-lsp session on an endpoint: registers the server→client handlers,
 * forwards updates, and refreshes `SessionState` after every command so the status bar
 * and the sidebar never show a stale mode.
 */
export class PlanLspSession {
  private state: SessionState | undefined;
  private readonly disposables: { dispose(): void }[] = [];

  constructor(private readonly endpoint: RpcEndpoint, private readonly ui: SessionUi) {
    this.disposables.push(
      endpoint.onNotification(Methods.update, (update) => this.handleUpdate(update)),
      endpoint.onRequest(Methods.requestPermission, (params, token) =>
        this.ui.askPermission(params, token).catch(() => DISMISSED_PERMISSION),
      ),
      endpoint.onRequest(Methods.askUser, (params, token) =>
        this.ui.askUser(params, token).catch(() => ({ answers: {} })),
      ),
    );
  }

  get current(): SessionState | undefined {
    return this.state;
  }

  dispose(): void {
    for (const d of this.disposables.splice(0)) d.dispose();
  }

  private handleUpdate(update: PlanLspUpdate): void {
    this.ui.onUpdate(update);
    if (update.kind === 'modeChanged') {
      const embedded = update.state;
      if (embedded && typeof embedded === 'object' && 'mode' in embedded) {
        this.setState(embedded as SessionState);
      } else if (this.state) {
        const next = { ...this.state };
        if (update.mode === 'plan' || update.mode === 'build') next.mode = update.mode;
        if (typeof update.permissionMode === 'string') next.permissionMode = update.permissionMode as PermissionMode;
        if (typeof update.planStatus === 'string') next.planStatus = update.planStatus as SessionState['planStatus'];
        this.setState(next);
      }
      void this.refresh();
    } else if (update.kind === 'todos' && this.state && Array.isArray(update.todos)) {
      this.setState({ ...this.state, todos: update.todos as Todo[] });
    } else if (update.kind === 'done' || update.kind === 'error' || update.kind === 'planDraft') {
      void this.refresh();
    }
  }

  private setState(state: SessionState): SessionState {
    this.state = state;
    this.ui.onState(state);
    return state;
  }

  /** Asks the server for the current state (`planLsp/state`). */
  async refresh(): Promise<SessionState | undefined> {
    try {
      return this.setState(await this.endpoint.sendRequest(Methods.state, {}));
    } catch (err) {
      this.ui.onError?.(`planLsp/state failed: ${errorMessage(err)}`);
      return undefined;
    }
  }

  private async stateCall<P>(type: RequestType<P, SessionState, void>, params: P): Promise<SessionState> {
    const state = await this.endpoint.sendRequest(type, params);
    if (state && typeof state === 'object' && 'mode' in state) return this.setState(state);
    return (await this.refresh()) ?? state;
  }

  toggleMode(): Promise<SessionState> {
    return this.stateCall(Methods.toggleMode, {});
  }

  setMode(mode: WorkMode): Promise<SessionState> {
    return this.stateCall(Methods.setMode, { mode });
  }

  setPermissionMode(permissionMode: PermissionMode): Promise<SessionState> {
    return this.stateCall(Methods.setPermissionMode, { permissionMode });
  }

  /** Runs a server command (`workspace/executeCommand`), then refreshes the state. */
  async executeServerCommand(command: string, args: unknown[]): Promise<unknown> {
    try {
      return await this.endpoint.sendRequest(Methods.executeCommand, { command, arguments: args });
    } finally {
      await this.refresh();
    }
  }

  approvePlan(args: ApprovePlanArgs = {}): Promise<unknown> {
    return this.executeServerCommand(ServerCommands.approvePlan, [args]);
  }

  rejectPlan(args: RejectPlanArgs = {}): Promise<unknown> {
    return this.executeServerCommand(ServerCommands.rejectPlan, [args]);
  }

  /** Sends a prompt; resolves when the run ends (the request stays open for the run). */
  async prompt(text: string, token?: CancellationToken): Promise<PromptResult> {
    void this.refresh();
    try {
      return await this.endpoint.sendRequest(Methods.prompt, { text }, token);
    } finally {
      await this.refresh();
    }
  }

  async cancel(runId?: string): Promise<void> {
    await this.endpoint.sendRequest(Methods.cancel, runId ? { runId } : {});
    await this.refresh();
  }
}

export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (err && typeof err === 'object' && 'message' in err) return String((err as { message: unknown }).message);
  return String(err);
}
