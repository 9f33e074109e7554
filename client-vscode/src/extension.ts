/**
 * Entry point: starts the plan-lsp server over stdio and wires it to the status bar, the
 * sidebar chat, the permission/question prompts and the client-side commands.
 */
import * as vscode from 'vscode';
import {
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
  StaticFeature,
  TransportKind,
} from 'vscode-languageclient/node';
import { StartError, resolveServerPython } from './bootstrap';
import { CHAT_VIEW_ID, ChatViewProvider } from './chatView';
import {
  AskUserParams,
  AskUserResult,
  PERMISSION_MODES,
  PermissionMode,
  PlanLspSession,
  RequestPermissionParams,
  RequestPermissionResult,
  RpcEndpoint,
  SessionState,
  SessionUi,
  errorMessage,
  fillPlanLspCapabilities,
  permissionOptions,
  DISMISSED_PERMISSION,
} from './protocol';
import { REVISION_SCHEME, RevisionContentProvider } from './revisions';
import { initializationOptions, serverArguments } from './serverLaunch';
import { statusBarText, statusBarTooltip } from './statusText';
import type { WebviewToHost } from './webview/messages';

const API_KEY_SECRET = 'planLsp.apiKey';
/** Server command behind the "Compare with previous revision" code lens. */
const SHOW_PREVIOUS_REVISION = 'planLsp.showPreviousRevision';

/** Declares `experimental.planLsp` so the server sends permission and question requests. */
class PlanLspCapabilitiesFeature implements StaticFeature {
  fillClientCapabilities(capabilities: { experimental?: unknown }): void {
    fillPlanLspCapabilities(capabilities);
  }
  initialize(): void {}
  getState(): { kind: 'static' } {
    return { kind: 'static' };
  }
  clear(): void {}
  dispose(): void {}
}

class Controller implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private session: PlanLspSession | undefined;
  private promptRun: vscode.CancellationTokenSource | undefined;
  private readonly output = vscode.window.createOutputChannel('Plan LSP');
  private readonly statusBar = vscode.window.createStatusBarItem('planLsp.mode', vscode.StatusBarAlignment.Left, 100);
  readonly chat: ChatViewProvider;
  readonly revisions = new RevisionContentProvider();

  constructor(private readonly context: vscode.ExtensionContext) {
    this.chat = new ChatViewProvider(context.extensionUri, { handle: (m) => this.onChatMessage(m) });
    this.statusBar.name = 'Plan LSP mode';
    this.statusBar.command = 'planLsp.client.toggleMode';
    this.setStatusStarting();
    this.statusBar.show();
  }

  get current(): SessionState | undefined {
    return this.session?.current;
  }

  private setStatusStarting(): void {
    this.statusBar.text = '$(sync~spin) Plan LSP';
    this.statusBar.tooltip = 'Plan LSP: starting the server';
    this.statusBar.backgroundColor = undefined;
  }

  private setStatusError(message: string): void {
    this.statusBar.text = '$(error) Plan LSP';
    this.statusBar.tooltip = `${message}\nClick to show the log`;
    this.statusBar.command = 'planLsp.client.showLog';
    this.statusBar.backgroundColor = new vscode.ThemeColor('statusBarItem.errorBackground');
  }

  private showState(state: SessionState): void {
    this.statusBar.text = statusBarText(state);
    this.statusBar.tooltip = statusBarTooltip(state);
    this.statusBar.command = 'planLsp.client.toggleMode';
    this.statusBar.backgroundColor = state.mode === 'build' ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
  }

  private readonly ui: SessionUi = {
    onUpdate: (update) => this.chat.dispatch({ type: 'update', update }),
    onState: (state) => {
      this.showState(state);
      this.chat.dispatch({ type: 'state', state });
    },
    askPermission: (params, token) => this.askPermission(params, token),
    askUser: (params, token) => this.askUser(params, token),
    onError: (message) => this.output.appendLine(message),
  };

  async start(): Promise<void> {
    this.setStatusStarting();
    this.chat.dispatch({ type: 'serverStatus', status: 'starting' });
    let python: string;
    try {
      python = await resolveServerPython(this.context, this.output);
    } catch (err) {
      this.failStart(err);
      return;
    }
    const config = vscode.workspace.getConfiguration('planLsp');
    const extraArgs = config.get<string[]>('serverArgs', []);
    const folder = vscode.workspace.workspaceFolders?.[0];
    const serverOptions: ServerOptions = {
      command: python,
      args: serverArguments(extraArgs),
      transport: TransportKind.stdio,
      options: folder ? { cwd: folder.uri.fsPath } : undefined,
    };
    const apiKey = await this.context.secrets.get(API_KEY_SECRET);
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: 'file' }, { scheme: 'untitled' }],
      outputChannel: this.output,
      initializationOptions: initializationOptions(
        {
          provider: config.get<string>('provider', ''),
          model: config.get<string>('model', ''),
          baseUrl: config.get<string>('baseUrl', ''),
          permissionMode: config.get<string>('permissionMode', 'ask'),
          plansDir: config.get<string>('plansDir', ''),
          planShell: config.get<string>('planShell', ''),
        },
        apiKey,
      ),
      middleware: {
        // Code lenses run the server's commands directly; refresh the mode afterwards.
        executeCommand: async (command, args, next) => {
          try {
            const result: unknown = await next(command, args);
            if (command === SHOW_PREVIOUS_REVISION) await this.diffWithPrevious(result);
            return result;
          } finally {
            void this.session?.refresh();
          }
        },
      },
    };
    this.output.appendLine(`Starting: ${python} ${serverArguments(extraArgs).join(' ')} --stdio`);
    const client = new LanguageClient('planLsp', 'Plan LSP', serverOptions, clientOptions);
    client.registerFeature(new PlanLspCapabilitiesFeature());
    this.client = client;
    this.session = new PlanLspSession(client as unknown as RpcEndpoint, this.ui);
    client.onDidChangeState((e) => {
      if (e.newState === State.Stopped && this.client === client) {
        this.chat.dismissPending();
        this.chat.dispatch({ type: 'serverStatus', status: 'stopped', message: 'The plan-lsp server stopped. Run "Plan LSP: Restart Server".' });
        this.setStatusError('The plan-lsp server stopped');
      }
    });
    try {
      await client.start();
    } catch (err) {
      this.failStart(
        new StartError(
          `Plan LSP: the server failed to start (${errorMessage(err)}). Fix: check the "Plan LSP" output; ` +
            `\`${python} -m plan_lsp serve --help\` must work, and "planLsp.serverArgs" must be valid.`,
        ),
      );
      return;
    }
    this.chat.dispatch({ type: 'serverStatus', status: 'running' });
    await this.session.refresh();
  }

  private failStart(err: unknown): void {
    const message = errorMessage(err);
    this.output.appendLine(message);
    this.setStatusError(message);
    this.chat.dispatch({ type: 'serverStatus', status: 'error', message });
    void vscode.window.showErrorMessage(message, 'Open Settings', 'Show Log').then((choice) => {
      if (choice === 'Open Settings') void vscode.commands.executeCommand('workbench.action.openSettings', 'planLsp');
      else if (choice === 'Show Log') this.output.show();
    });
  }

  async stop(): Promise<void> {
    this.promptRun?.cancel();
    const client = this.client;
    this.client = undefined;
    this.session?.dispose();
    this.session = undefined;
    this.chat.dismissPending();
    if (client) {
      try {
        await client.stop(5000);
      } catch (err) {
        this.output.appendLine(`stop: ${errorMessage(err)}`);
      }
    }
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  requireSession(): PlanLspSession {
    if (!this.session || !this.client?.isRunning()) {
      throw new Error('The plan-lsp server is not running. Run "Plan LSP: Restart Server" (the "Plan LSP" output says why).');
    }
    return this.session;
  }

  private async askPermission(params: RequestPermissionParams, token: vscode.CancellationToken): Promise<RequestPermissionResult> {
    if (this.chat.visible) return this.chat.askPermission(params, token);
    const options = permissionOptions(params);
    const choice = await vscode.window.showInformationMessage(
      `Plan LSP: allow ${params.tool}?`,
      { modal: true, detail: params.summary },
      ...options.map((o) => o.label),
    );
    const optionId = options.find((o) => o.label === choice)?.optionId ?? DISMISSED_PERMISSION.optionId;
    // Keep the decision in the chat history too.
    const requestId = `modal-${Date.now()}`;
    this.chat.dispatch({ type: 'permissionRequest', requestId, params });
    this.chat.dispatch({ type: 'permissionAnswered', requestId, optionId });
    return { optionId };
  }

  private async askUser(params: AskUserParams, token: vscode.CancellationToken): Promise<AskUserResult> {
    if (this.chat.visible) return this.chat.askUser(params, token);
    const answers: Record<string, string[]> = {};
    for (const question of params.questions ?? []) {
      if (token.isCancellationRequested) break;
      if (question.multiple) {
        const picked = await vscode.window.showQuickPick(question.options, { title: question.text, canPickMany: true, ignoreFocusOut: true }, token);
        if (picked) answers[question.id] = picked;
      } else {
        const picked = await vscode.window.showQuickPick(question.options, { title: question.text, ignoreFocusOut: true }, token);
        if (picked !== undefined) answers[question.id] = [picked];
      }
    }
    return { answers };
  }

  async sendPrompt(text: string): Promise<void> {
    const session = this.requireSession();
    this.chat.dispatch({ type: 'userPrompt', text });
    const run = new vscode.CancellationTokenSource();
    this.promptRun = run;
    try {
      const result = await session.prompt(text, run.token);
      this.chat.dispatch({ type: 'promptEnded', stopReason: result?.stopReason });
    } catch (err) {
      const cancelled = run.token.isCancellationRequested;
      this.chat.dispatch({ type: 'promptEnded', stopReason: cancelled ? 'cancelled' : undefined, error: cancelled ? undefined : errorMessage(err) });
    } finally {
      if (this.promptRun === run) this.promptRun = undefined;
      run.dispose();
    }
  }

  async cancel(): Promise<void> {
    const session = this.requireSession();
    try {
      await session.cancel();
    } finally {
      this.promptRun?.cancel();
    }
  }

  /** The server's "Compare with previous revision" lens answers with the old revision's
   * file; show it against the live PLAN.md buffer. */
  private async diffWithPrevious(result: unknown): Promise<void> {
    const previousUri = result && typeof result === 'object' ? (result as { previousUri?: unknown }).previousUri : undefined;
    const planUri = this.current?.planUri;
    if (typeof previousUri !== 'string' || !planUri) return;
    await vscode.commands.executeCommand(
      'vscode.diff', vscode.Uri.parse(previousUri), vscode.Uri.parse(planUri), 'PLAN.md: previous revision ↔ current',
    );
  }

  async openPlan(): Promise<void> {
    const uri = this.current?.planUri;
    if (!uri) {
      void vscode.window.showInformationMessage('Plan LSP: there is no plan yet.');
      return;
    }
    await vscode.window.showTextDocument(vscode.Uri.parse(uri), { preview: false });
  }

  async rejectWithFeedback(): Promise<void> {
    const feedback = await vscode.window.showInputBox({
      title: 'Reject the plan with feedback',
      prompt: 'What should the agent change? A new planning run receives this.',
      ignoreFocusOut: true,
    });
    if (feedback === undefined) return;
    await this.requireSession().rejectPlan(feedback.trim() ? { feedback } : {});
  }

  async pickPermissionMode(): Promise<void> {
    const current = this.current?.permissionMode;
    const picked = await vscode.window.showQuickPick(
      PERMISSION_MODES.map((mode) => ({ label: mode, description: mode === current ? 'current' : undefined })),
      { title: 'Plan LSP: permission mode' },
    );
    if (picked) await this.requireSession().setPermissionMode(picked.label as PermissionMode);
  }

  private async onChatMessage(message: WebviewToHost): Promise<void> {
    switch (message.type) {
      case 'prompt':
        return this.sendPrompt(message.text);
      case 'cancel':
        return this.cancel();
      case 'setMode':
        await this.requireSession().setMode(message.mode);
        return;
      case 'setPermissionMode':
        await this.requireSession().setPermissionMode(message.permissionMode);
        return;
      case 'approve':
        await this.requireSession().approvePlan({});
        return;
      case 'reject':
        await this.requireSession().rejectPlan({});
        return;
      case 'feedback':
        return this.rejectWithFeedback();
      case 'openPlan':
        return this.openPlan();
      case 'inputFocus':
        await vscode.commands.executeCommand('setContext', 'planLsp.chatInputFocused', message.focused);
        return;
      default:
        return;
    }
  }

  showLog(): void {
    this.output.show();
  }

  dispose(): void {
    void this.stop();
    this.chat.dispose();
    this.statusBar.dispose();
    this.output.dispose();
  }
}

let controller: Controller | undefined;

function guarded<A extends unknown[]>(fn: (...args: A) => unknown): (...args: A) => Promise<void> {
  return async (...args: A) => {
    try {
      await fn(...args);
    } catch (err) {
      void vscode.window.showErrorMessage(`Plan LSP: ${errorMessage(err)}`);
    }
  };
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const c = new Controller(context);
  controller = c;
  context.subscriptions.push(
    c,
    vscode.window.registerWebviewViewProvider(CHAT_VIEW_ID, c.chat, { webviewOptions: { retainContextWhenHidden: true } }),
    vscode.workspace.registerTextDocumentContentProvider(REVISION_SCHEME, c.revisions),
    vscode.commands.registerCommand('planLsp.client.toggleMode', guarded(() => c.requireSession().toggleMode())),
    vscode.commands.registerCommand('planLsp.client.setPermissionMode', guarded(() => c.pickPermissionMode())),
    vscode.commands.registerCommand('planLsp.client.approve', guarded((args?: unknown) =>
      c.requireSession().approvePlan(args && typeof args === 'object' ? (args as object) : {}))),
    vscode.commands.registerCommand('planLsp.client.reject', guarded(() => c.requireSession().rejectPlan({}))),
    vscode.commands.registerCommand('planLsp.client.rejectWithFeedback', guarded(() => c.rejectWithFeedback())),
    vscode.commands.registerCommand('planLsp.client.cancel', guarded(() => c.cancel())),
    vscode.commands.registerCommand('planLsp.client.compareRevisions', guarded((args: unknown) => c.revisions.compare(args))),
    vscode.commands.registerCommand('planLsp.client.setApiKey', guarded(async () => {
      const key = await vscode.window.showInputBox({ title: 'Plan LSP: API key', prompt: 'Stored in VS Code\'s secret storage, never in settings.', password: true, ignoreFocusOut: true });
      if (key === undefined) return;
      await context.secrets.store(API_KEY_SECRET, key);
      const restart = await vscode.window.showInformationMessage('Plan LSP: API key saved. Restart the server to use it?', 'Restart');
      if (restart) await c.restart();
    })),
    vscode.commands.registerCommand('planLsp.client.clearApiKey', guarded(() => context.secrets.delete(API_KEY_SECRET))),
    vscode.commands.registerCommand('planLsp.client.showLog', () => c.showLog()),
    vscode.commands.registerCommand('planLsp.restartServer', guarded(() => c.restart())),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('planLsp')) {
        void vscode.window.showInformationMessage('Plan LSP settings changed. Restart the server to apply them?', 'Restart').then((choice) => {
          if (choice) void c.restart();
        });
      }
    }),
  );
  await c.start();
}

export async function deactivate(): Promise<void> {
  await controller?.stop();
  controller = undefined;
}
