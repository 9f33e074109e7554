/**
 * The plan-lsp wire contract (docs/protocol.md) as typed JSON-RPC messages, and the
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
  HistoryResult,
  PermissionMode,
  PlanLspUpdate,
  PromptResult,
  RejectPlanArgs,
  RequestPermissionParams,
  RequestPermissionResult,
  SessionState,
  TestConnectionResult,
  WorkMode,
} from './wireTypes';
import { DISMISSED_PERMISSION } from './wireTypes';
import type { CheckpointsResult, PlansResult, RevertResult } from './protocol.generated';


/** Every request may name its workspace folder (the server's first folder by default). */
export interface WorkspaceParam {
  workspaceUri?: string;
}

export const Methods = {
  state: new RequestType<WorkspaceParam, SessionState, void>('planLsp/state'),
  setMode: new RequestType<WorkspaceParam & { mode: WorkMode }, SessionState, void>('planLsp/setMode'),
  toggleMode: new RequestType<WorkspaceParam, SessionState, void>('planLsp/toggleMode'),
  setPermissionMode: new RequestType<WorkspaceParam & { permissionMode: PermissionMode }, SessionState, void>(
    'planLsp/setPermissionMode',
  ),
  prompt: new RequestType<WorkspaceParam & { text: string }, PromptResult, void>('planLsp/prompt'),
  /** Runs again the last run the model server failed (its prompt is not typed again). */
  retry: new RequestType<WorkspaceParam, PromptResult, void>('planLsp/retry'),
  cancel: new RequestType<WorkspaceParam & { runId?: string }, Record<string, never>, void>('planLsp/cancel'),
  approvePlan: new RequestType<ApprovePlanArgs, SessionState, void>('planLsp/approvePlan'),
  rejectPlan: new RequestType<RejectPlanArgs, SessionState, void>('planLsp/rejectPlan'),
  history: new RequestType<WorkspaceParam, HistoryResult, void>('planLsp/history'),
  newSession: new RequestType<WorkspaceParam & { keepApprovedPlan?: boolean }, SessionState, void>('planLsp/newSession'),
  testConnection: new RequestType<WorkspaceParam, TestConnectionResult, void>('planLsp/testConnection'),
  /** Every plan of the workspace, each round's own file, with its status. */
  plans: new RequestType<WorkspaceParam, PlansResult, void>('planLsp/plans'),
  /** Summarises the conversation now; refused while a run is in progress. */
  compact: new RequestType<WorkspaceParam, SessionState, void>('planLsp/compact'),
  /** The session's checkpoints, and whether a revert can be undone. */
  checkpoints: new RequestType<WorkspaceParam, CheckpointsResult, void>('planLsp/checkpoints'),
  /** Undoes the last revert. */
  redo: new RequestType<WorkspaceParam, RevertResult, void>('planLsp/redo'),
  update: new NotificationType<PlanLspUpdate>('planLsp/update'),
  requestPermission: new RequestType<RequestPermissionParams, RequestPermissionResult, void>(
    'planLsp/requestPermission',
  ),
  askUser: new RequestType<AskUserParams, AskUserResult, void>('planLsp/askUser'),
  saveDocument: new RequestType<{ uri: string }, { saved: boolean }, void>('planLsp/saveDocument'),
  executeCommand: new RequestType<{ command: string; arguments?: unknown[] }, unknown, void>(
    'workspace/executeCommand',
  ),
} as const;

/** Server command ids (docs/protocol.md, Commands), run through `workspace/executeCommand`. */
export const ServerCommands = {
  approvePlan: 'planLsp.approvePlan',
  rejectPlan: 'planLsp.rejectPlan',
  toggleMode: 'planLsp.toggleMode',
  /** The step lens's revert (`{checkpointId}`). */
  revert: 'planLsp.revert',
} as const;

/** What this client declares under `capabilities.experimental.planLsp`. */
export const CLIENT_EXPERIMENTAL_CAPABILITIES = {
  permissionRequests: true,
  questions: true,
  // The server asks the client to save a buffer it edited (so buffer and disk agree
  // without the file changing under the editor).
  saveDocuments: true,
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
  /** Saves the open buffer of `uri`; true when the disk now holds it. */
  saveDocument?(uri: string): Promise<boolean>;
  onError?(message: string): void;
}

/** Whether a payload is a `SessionState` (the server sends it whole, never in pieces). */
export function isSessionState(value: unknown): value is SessionState {
  if (!value || typeof value !== 'object') return false;
  const v = value as Record<string, unknown>;
  return typeof v.sessionId === 'string' && (v.mode === 'plan' || v.mode === 'build') && typeof v.planStatus === 'string';
}

/** Compares two `file:` URIs as paths (clients and servers percent-encode differently). */
export function sameWorkspace(a: string, b: string): boolean {
  const norm = (uri: string): string => {
    try {
      return decodeURIComponent(uri).replace(/^file:\/\/(localhost)?/i, '').replace(/\/+$/, '');
    } catch {
      return uri;
    }
  };
  return norm(a) === norm(b);
}

/**
 * One client-side plan-lsp session on an endpoint: registers the server→client handlers and
 * forwards updates. The state is what the server pushes (`planLsp/update` kind `state`) or
 * answers to a state-changing request; the client never rebuilds it from other updates and
 * never polls. `planLsp/state` is asked once, when the session starts.
 */
export class PlanLspSession {
  private state: SessionState | undefined;
  private readonly disposables: { dispose(): void }[] = [];

  /** `workspaceUri`: the folder this session belongs to; updates for other folders are
   * dropped and every request names it. */
  constructor(
    private readonly endpoint: RpcEndpoint,
    private readonly ui: SessionUi,
    private readonly workspaceUri?: string,
  ) {
    this.disposables.push(
      endpoint.onNotification(Methods.update, (update) => this.handleUpdate(update)),
      endpoint.onRequest(Methods.requestPermission, (params, token) =>
        this.ui.askPermission(params, token).catch(() => DISMISSED_PERMISSION),
      ),
      endpoint.onRequest(Methods.askUser, (params, token) =>
        this.ui.askUser(params, token).catch(() => ({ answers: {} })),
      ),
      endpoint.onRequest(Methods.saveDocument, async (params) => {
        const saved = this.ui.saveDocument && typeof params?.uri === 'string'
          ? await this.ui.saveDocument(params.uri).catch(() => false)
          : false;
        return { saved };
      }),
    );
  }

  get current(): SessionState | undefined {
    return this.state;
  }

  dispose(): void {
    for (const d of this.disposables.splice(0)) d.dispose();
  }

  private where(): WorkspaceParam {
    return this.workspaceUri ? { workspaceUri: this.workspaceUri } : {};
  }

  private handleUpdate(update: PlanLspUpdate): void {
    const target = update.workspaceUri;
    if (this.workspaceUri && typeof target === 'string' && !sameWorkspace(target, this.workspaceUri)) return;
    if (update.kind === 'state') {
      if (isSessionState(update.state)) this.setState(update.state);
      return;
    }
    this.ui.onUpdate(update);
  }

  private setState(state: SessionState): SessionState {
    this.state = state;
    this.ui.onState(state);
    return state;
  }

  /** Asks the server for the current state once (`planLsp/state`), when the session starts. */
  async fetchState(): Promise<SessionState | undefined> {
    try {
      return this.setState(await this.endpoint.sendRequest(Methods.state, this.where()));
    } catch (err) {
      this.ui.onError?.(`planLsp/state failed: ${errorMessage(err)}`);
      return undefined;
    }
  }

  /** The conversation as the server kept it, oldest first (`planLsp/history`). */
  async history(): Promise<PlanLspUpdate[]> {
    const result = await this.endpoint.sendRequest(Methods.history, this.where());
    return Array.isArray(result?.updates) ? result.updates : [];
  }

  private async stateCall<P>(type: RequestType<P, SessionState, void>, params: P): Promise<SessionState> {
    const state = await this.endpoint.sendRequest(type, params);
    return isSessionState(state) ? this.setState(state) : state;
  }

  toggleMode(): Promise<SessionState> {
    return this.stateCall(Methods.toggleMode, this.where());
  }

  setMode(mode: WorkMode): Promise<SessionState> {
    return this.stateCall(Methods.setMode, { ...this.where(), mode });
  }

  setPermissionMode(permissionMode: PermissionMode): Promise<SessionState> {
    return this.stateCall(Methods.setPermissionMode, { ...this.where(), permissionMode });
  }

  /** Clears the conversation (`planLsp/newSession`), keeping or dropping the approved plan. */
  newSession(keepApprovedPlan: boolean): Promise<SessionState> {
    return this.stateCall(Methods.newSession, { ...this.where(), keepApprovedPlan });
  }

  /** Compacts the conversation (`planLsp/compact`); the server refuses while a run is in
   * progress (the promise rejects with its message). */
  compact(): Promise<SessionState> {
    return this.stateCall(Methods.compact, this.where());
  }

  testConnection(): Promise<TestConnectionResult> {
    return this.endpoint.sendRequest(Methods.testConnection, this.where());
  }

  plans(): Promise<PlansResult> {
    return this.endpoint.sendRequest(Methods.plans, this.where());
  }

  /** Runs a server command (`workspace/executeCommand`); a `SessionState` answer is rendered. */
  async executeServerCommand(command: string, args: unknown[]): Promise<unknown> {
    const result = await this.endpoint.sendRequest(Methods.executeCommand, { command, arguments: args });
    if (isSessionState(result)) this.setState(result);
    return result;
  }

  approvePlan(args: ApprovePlanArgs = {}): Promise<unknown> {
    return this.executeServerCommand(ServerCommands.approvePlan, [{ ...this.where(), ...args }]);
  }

  rejectPlan(args: RejectPlanArgs = {}): Promise<unknown> {
    return this.executeServerCommand(ServerCommands.rejectPlan, [{ ...this.where(), ...args }]);
  }

  checkpoints(): Promise<CheckpointsResult> {
    return this.endpoint.sendRequest(Methods.checkpoints, this.where());
  }

  /** Reverts the workspace to a checkpoint through the step lens's command; the server
   * refuses while a run is in progress (the promise rejects with its reason). */
  revert(checkpointId: string): Promise<unknown> {
    return this.executeServerCommand(ServerCommands.revert, [{ ...this.where(), checkpointId }]);
  }

  redo(): Promise<RevertResult> {
    return this.endpoint.sendRequest(Methods.redo, this.where());
  }

  /** Sends a prompt; resolves when the run ends (the request stays open for the run). */
  prompt(text: string, token?: CancellationToken): Promise<PromptResult> {
    return this.endpoint.sendRequest(Methods.prompt, { ...this.where(), text }, token);
  }

  /** Runs again the run the model server failed; resolves when it ends. */
  retry(token?: CancellationToken): Promise<PromptResult> {
    return this.endpoint.sendRequest(Methods.retry, this.where(), token);
  }

  async cancel(runId?: string): Promise<void> {
    await this.endpoint.sendRequest(Methods.cancel, runId ? { ...this.where(), runId } : this.where());
  }
}

export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (err && typeof err === 'object' && 'message' in err) return String((err as { message: unknown }).message);
  return String(err);
}
