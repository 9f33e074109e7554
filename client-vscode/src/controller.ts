/**
 * One plan-lsp server for the window: its start-up (interpreter, first-run install, isolated
 * launch), the session on it, and what the user sees of it — status bar, sidebar chat, the
 * plan in the editor, permission prompts with the proposed change, the log.
 */
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as vscode from 'vscode';
import {
  CancellationToken, CodeLensRequest, LanguageClient, LanguageClientOptions, ResponseError, State, StaticFeature,
} from 'vscode-languageclient/node';
import { StartError, resolveServerPython } from './bootstrap';
import { ChatViewProvider } from './chatView';
import { CheckpointTimeline } from './checkpointTimeline';
import { DocumentLog } from './documentLog';
import { EditorContext } from './editorContext';
import { EditPreviews } from './editPreviews';
import {
  PlanLspSession,
  PlanLspUpdate,
  SessionState,
  SessionUi,
  errorMessage,
  fillPlanLspCapabilities,
} from './protocol';
import { ServerProcess, describeExit } from './serverProcess';
import { asksForFeedback } from './rejectFeedback';
import { actsOnSelection, asksForComment } from './planComment';
import { awaitsDecision, planName } from './plansList';
import { SessionActions } from './sessionActions';
import {
  describeModelSettings,
  initializationOptions,
  launchDirectory,
  serverArguments,
} from './serverLaunch';
import { ClientSettings, ReadSettings, ignoredSettingsWarning, readUserSettings } from './settings';
import { API_KEY_SECRET } from './setup';
import { ModeStatusBar } from './statusBar';
import { UserRequests } from './userRequests';
import { VirtualTexts } from './virtualTexts';
import { parseArguments } from './webview/chatState';
import type { WebviewToHost } from './webview/messages';

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

/** Reads this extension's settings from the user's own settings (settings.ts). */
export function currentSettings(): ReadSettings {
  const folder = vscode.workspace.workspaceFolders?.[0];
  const config = vscode.workspace.getConfiguration('planLsp', folder?.uri);
  return readUserSettings((key) => config.inspect(key));
}

export class Controller implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private process: ServerProcess | undefined;
  private session: PlanLspSession | undefined;
  private starting: Promise<void> | undefined;
  private launched: ClientSettings | undefined;
  private readonly draftsSeen = new Set<string>();
  private lastState: SessionState | undefined;
  private loggedProvider = '';
  private notifiedWarnings = '';
  readonly output = vscode.window.createOutputChannel('Plan LSP');
  private readonly statusBar = new ModeStatusBar();
  readonly chat: ChatViewProvider;
  readonly texts = new VirtualTexts();
  readonly previews: EditPreviews;
  readonly requests: UserRequests;
  readonly actions: SessionActions;
  private readonly editorContext: EditorContext;
  private readonly documentLog = DocumentLog.fromEnvironment();
  private readonly timeline = new CheckpointTimeline(
    () => (this.client?.isRunning() ? this.session : undefined),
    () => this.requireSession(),
    (event) => this.chat.dispatch(event),
    (message) => this.output.appendLine(message),
  );

  constructor(private readonly context: vscode.ExtensionContext) {
    this.chat = new ChatViewProvider(context.extensionUri, { handle: (m) => this.onChatMessage(m) });
    this.previews = new EditPreviews(this.texts, () => vscode.workspace.workspaceFolders?.[0]?.uri.fsPath);
    this.requests = new UserRequests(this.chat, this.previews, this);
    this.actions = new SessionActions(this.chat, this);
    this.editorContext = new EditorContext((message) => void this.chat.post(message));
    this.chat.onReady = () => this.editorContext.publish(true);
  }

  get current(): SessionState | undefined {
    return this.session?.current;
  }

  /** The settings the running server was started with. */
  get launchedWith(): ClientSettings | undefined {
    return this.launched;
  }

  get busy(): boolean {
    return this.current?.running === true || this.actions.prompting;
  }

  // -- what the server tells us ----------------------------------------------------------------

  private readonly ui: SessionUi = {
    onUpdate: (update) => this.onUpdate(update),
    onState: (state) => this.onState(state),
    askPermission: (params, token) => this.requests.askPermission(params, token),
    askUser: (params, token) => this.requests.askUser(params, token),
    saveDocument: (uri) => this.requests.saveDocument(uri),
    onError: (message) => this.output.appendLine(message),
  };

  private onUpdate(update: PlanLspUpdate): void {
    const runId = typeof update.runId === 'string' ? update.runId : null;
    if (update.kind === 'toolCall' && typeof update.tool === 'string') {
      this.previews.noteToolCall(runId, update.tool, parseArguments(update.arguments));
    } else if (update.kind === 'toolResult' && typeof update.tool === 'string') {
      this.previews.callEnded(runId, update.tool);
    } else if (update.kind === 'planDraft' && typeof update.uri === 'string') {
      // A new draft brings the plan to the front, without taking the focus from typing.
      // The server creates the file before it says "drafting"; one that does so only later
      // (an older server) gets the reveal again with the next update.
      const key = `${runId}\u0000${update.uri}`;
      if (!this.draftsSeen.has(key)) {
        this.draftsSeen.add(key);
        void this.revealPlan(update.uri).then((shown) => {
          if (!shown) this.draftsSeen.delete(key);
        });
      }
    } else if (update.kind === 'error') {
      const code = typeof update.code === 'string' ? ` (${update.code})` : '';
      this.output.appendLine(`Run error${code}: ${String(update.message ?? '')}`);
    }
    this.chat.dispatch({ type: 'update', update });
    this.timeline.noteUpdate(update);
  }

  private onState(state: SessionState): void {
    const previous = this.lastState;
    this.lastState = state;
    this.documentLog?.state(state);
    this.statusBar.show(state);
    this.chat.dispatch({ type: 'state', state });
    const provider = state.provider;
    if (provider) {
      const line =
        `Server model: ${provider.name}, model ${provider.model || '(none)'}, base URL ${provider.baseUrl || '(provider default)'}` +
        (provider.configured ? '' : ' — not configured') + (provider.problem ? ` — ${provider.problem}` : '');
      if (line !== this.loggedProvider) {
        this.loggedProvider = line;
        this.output.appendLine(line);
      }
    }
    this.setContext('planLsp.modelReady', provider ? provider.configured && !provider.problem : false);
    this.setContext('planLsp.planSubmitted', ['submitted', 'approved'].includes(state.planStatus));
    this.setContext('planLsp.planApproved', state.planStatus === 'approved');
    // The palette offers Approve / Reject only when a plan waits for them, Stop only in a run.
    this.setContext('planLsp.planAwaitsDecision', awaitsDecision(state.planStatus, state.running));
    this.setContext('planLsp.running', state.running);
    if (previous && (previous.planStatus !== state.planStatus || previous.mode !== state.mode || previous.approvedPlan?.sha256 !== state.approvedPlan?.sha256)) {
      this.refreshCodeLenses(state.planUri);
    }
  }

  private readonly contextValues = new Map<string, boolean>();

  /** Sets a context key (walkthrough progress, menus) when its value changes. */
  sessionCleared(): void {
    this.draftsSeen.clear();
  }

  setContext(key: string, value: boolean): void {
    if (this.contextValues.get(key) === value) return;
    this.contextValues.set(key, value);
    void vscode.commands.executeCommand('setContext', key, value);
  }

  /** The plan's lenses depend on its status: ask the lens provider again after a change. */
  private refreshCodeLenses(planUri: string | null): void {
    const feature = this.client?.getFeature(CodeLensRequest.method);
    if (!feature || !planUri) return;
    for (const document of vscode.workspace.textDocuments) {
      if (document.uri.toString() !== vscode.Uri.parse(planUri).toString()) continue;
      feature.getProvider(document)?.onDidChangeCodeLensEmitter.fire();
    }
  }

  /** Brings PLAN.md to the front of the group that has it (or the active one) without taking
   * the focus (typing in the chat goes on) and pinned (not a preview that the next file opened
   * would replace while the plan streams into it). False when it could not be shown. */
  async revealPlan(uri: string): Promise<boolean> {
    const target = vscode.Uri.parse(uri);
    const group = vscode.window.tabGroups.all.find((g) =>
      g.tabs.some((t) => t.input instanceof vscode.TabInputText && t.input.uri.toString() === target.toString()),
    );
    try {
      await vscode.window.showTextDocument(target, { preserveFocus: true, preview: false, viewColumn: group?.viewColumn });
      return true;
    } catch (err) {
      this.output.appendLine(`could not show ${uri}: ${errorMessage(err)}`);
      return false;
    }
  }

  // -- start and stop --------------------------------------------------------------------------

  /** Starts the server; concurrent calls share one start. */
  start(): Promise<void> {
    this.starting ??= this.doStart().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  /** Shows (sidebar, log, notification) the workspace settings that were ignored. */
  reportSettings(read: ReadSettings): void {
    const warning = ignoredSettingsWarning(read.ignored);
    const warnings = warning ? [warning] : [];
    if (read.invalid.length) warnings.push(`Plan LSP: ${read.invalid.join(', ')} in your user settings have the wrong type; the defaults are used.`);
    this.chat.dispatch({ type: 'clientWarnings', warnings });
    // The sidebar keeps showing them; a notification only when they change.
    const key = warnings.join('\n');
    if (key === this.notifiedWarnings) return;
    this.notifiedWarnings = key;
    for (const w of warnings) {
      this.output.appendLine(w);
      void vscode.window.showWarningMessage(w, 'Open User Settings').then((choice) => {
        if (choice) void vscode.commands.executeCommand('workbench.action.openSettingsJson');
      });
    }
  }

  private async doStart(): Promise<void> {
    this.statusBar.starting();
    this.setContext('planLsp.serverReady', false);
    this.chat.dispatch({ type: 'serverStatus', status: 'starting' });
    const read = currentSettings();
    this.reportSettings(read);
    const settings = read.settings;
    this.launched = settings;
    const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
    const cwd = launchDirectory(this.context.globalStorageUri.fsPath, folders, os.tmpdir());
    fs.mkdirSync(cwd, { recursive: true });
    let python: string;
    try {
      const resolved = await resolveServerPython(this.context, this.output, settings, cwd, (step, detail, progress) =>
        this.chat.dispatch({ type: 'startup', step, detail, progress }),
      );
      python = resolved.python;
      this.output.appendLine(resolved.report);
    } catch (err) {
      this.failStart(err);
      return;
    }
    this.chat.dispatch({ type: 'startup', step: 'launch', detail: null, progress: 0.95 });
    const apiKey = await this.context.secrets.get(API_KEY_SECRET);
    this.output.appendLine(describeModelSettings(settings, Boolean(apiKey)));
    this.chat.dispatch({
      type: 'setupChoice',
      setup: { chosen: Boolean(settings.provider || settings.model || settings.baseUrl), keySet: Boolean(apiKey) },
    });
    const args = serverArguments(settings.serverArgs);
    this.output.appendLine(`Starting: ${python} ${args.join(' ')} (in ${cwd})`);
    const server = new ServerProcess(python, args, cwd, (exit) => {
      const { level, text } = describeExit(exit);
      this.output.appendLine(level === 'error' ? `[Error] ${text}` : text);
    });
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: 'file' }, { scheme: 'untitled' }],
      outputChannel: this.output,
      initializationOptions: initializationOptions(settings, apiKey),
      middleware: {
        window: {
          // The server shows the plan it drafts (takeFocus false) the way the drafting update
          // does: pinned, in the group that has it, the focus left where it is.
          showDocument: async (params, next) => {
            if (params.external || params.takeFocus === true || params.selection) {
              const result = await next(params, CancellationToken.None);
              return result instanceof ResponseError ? { success: false } : result;
            }
            return { success: await this.revealPlan(params.uri) };
          },
        },
        // "Comment on these lines…" acts on the selection: offered by Ctrl+. (planComment.ts).
        provideCodeActions: async (document, range, context, token, next) => {
          const actions = await next(document, range, context, token);
          for (const action of actions ?? []) {
            if (action instanceof vscode.CodeAction && actsOnSelection(action.command?.command)) action.kind = undefined;
          }
          return actions;
        },
        executeCommand: async (command, commandArgs, next) => {
          // The lens's Reject…/Revise…: the user types the feedback (or nothing) here.
          if (asksForFeedback(command, commandArgs)) return this.actions.rejectWithFeedback();
          // The code action's comment: typed in an input box, not into the plan.
          if (asksForComment(command, commandArgs)) return this.actions.commentOnPlan(commandArgs, (args) => next(command, args));
          const result: unknown = await next(command, commandArgs);
          if (command === SHOW_PREVIOUS_REVISION) await this.actions.diffWithPrevious(result);
          return result;
        },
      },
    };
    const client = new LanguageClient('planLsp', 'Plan LSP', () => server.start(), clientOptions);
    client.registerFeature(new PlanLspCapabilitiesFeature());
    const folder = vscode.workspace.workspaceFolders?.[0];
    this.client = client;
    this.process = server;
    this.draftsSeen.clear();
    this.lastState = undefined;
    this.session = new PlanLspSession(client, this.ui, folder ? workspaceUriOf(folder.uri) : undefined);
    client.onDidChangeState((e) => {
      if (e.newState === State.Stopped && this.client === client) {
        this.chat.dismissPending();
        this.chat.dispatch({ type: 'serverStatus', status: 'stopped', message: 'The plan-lsp server stopped; the log says why.' });
        this.statusBar.error('The plan-lsp server stopped');
        this.setContext('planLsp.serverReady', false);
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
    this.setContext('planLsp.serverReady', true);
    // The server pushes its state after `initialized`; ask once only if it has not yet.
    if (!this.session.current) await this.session.fetchState();
    await this.loadHistory();
  }

  /** Re-renders the conversation the server kept (after a reload, or a restart). */
  private async loadHistory(): Promise<void> {
    const session = this.session;
    if (!session) return;
    try {
      const updates = await session.history();
      this.chat.dispatch({ type: 'history', updates });
      this.timeline.noteHistory(updates);
    } catch (err) {
      this.output.appendLine(`planLsp/history failed: ${errorMessage(err)}`);
    }
  }

  private failStart(err: unknown): void {
    const message = errorMessage(err);
    this.output.appendLine(`[Error] ${message}`);
    this.statusBar.error(message);
    this.chat.dispatch({ type: 'serverStatus', status: 'error', message });
  }

  async stop(): Promise<void> {
    this.actions.abandonPrompt();
    const client = this.client;
    const server = this.process;
    this.client = undefined;
    this.process = undefined;
    this.session?.dispose();
    this.session = undefined;
    this.chat.dismissPending();
    server?.expectStop();
    if (client) {
      try {
        await client.stop(5000);
      } catch (err) {
        this.output.appendLine(`stop: ${errorMessage(err)}`);
      }
    }
    await server?.ensureStopped();
  }

  async restart(): Promise<void> {
    await this.starting?.catch(() => undefined);
    await this.stop();
    await this.start();
  }

  requireSession(): PlanLspSession {
    if (!this.session || !this.client?.isRunning()) {
      throw new Error('The plan-lsp server is not running. Run "Plan LSP: Restart Server" (the "Plan LSP" output says why).');
    }
    return this.session;
  }

  /** Compacts the conversation (`planLsp/compact`, the Compact button and command). The server
   * refuses while a run is in progress: its reason is shown as a message. The compaction card
   * and the new usage come as updates. */
  async compact(): Promise<void> {
    const session = this.requireSession();
    try {
      await session.compact();
    } catch (err) {
      const message = errorMessage(err);
      this.output.appendLine(`Compact: ${message}`);
      void vscode.window.showWarningMessage(`Plan LSP: could not compact the conversation: ${message}`);
    }
  }

  /** Messages from the webview that need more than the session: set by extension.ts. */
  onWebviewAction: (message: WebviewToHost) => Promise<void> = async () => undefined;

  /** The submitted plan as the editor holds it: its document and the hash of its text, so
   * the server approves exactly what the user can see there (and refuses anything else). */
  private async planAsShown(): Promise<{ planUri?: string; sha256?: string }> {
    const { planUri, sha256 } = await this.planText();
    return planUri ? { planUri, ...(sha256 ? { sha256 } : {}) } : {};
  }

  private async planText(): Promise<{ planUri?: string; sha256?: string; text: string }> {
    const planUri = this.lastState?.planUri;
    if (!planUri) return { text: '' };
    try {
      const text = (await vscode.workspace.openTextDocument(vscode.Uri.parse(planUri))).getText();
      return { planUri, sha256: crypto.createHash('sha256').update(text, 'utf8').digest('hex'), text };
    } catch {
      return { planUri, text: '' };
    }
  }

  /** *Approve Plan* from the palette: names the plan (its file and heading) and asks once;
   * approves exactly the text the editor holds. Nothing to approve: says so. */
  async approveFromPalette(): Promise<void> {
    const session = this.requireSession();
    const state = this.lastState;
    if (!state?.planUri || !awaitsDecision(state.planStatus, state.running)) {
      void vscode.window.showInformationMessage('Plan LSP: no plan waits for approval.');
      return;
    }
    const { planUri, sha256, text } = await this.planText();
    const choice = await vscode.window.showWarningMessage(
      `Approve ${planName(state.planUri, text)}?`,
      { modal: true, detail: 'The agent switches to Build and carries out this plan, as the editor shows it now.' },
      'Approve',
    );
    if (choice !== 'Approve') return;
    await session.approvePlan({ planUri, ...(sha256 ? { sha256 } : {}) });
  }

  private async onChatMessage(message: WebviewToHost): Promise<void> {
    switch (message.type) {
      case 'prompt':
        return this.actions.sendPrompt(message.text);
      case 'retryRun':
        return this.actions.retryRun();
      case 'cancel':
        return this.actions.cancel();
      case 'setMode':
        await this.requireSession().setMode(message.mode);
        return;
      case 'setPermissionMode':
        await this.requireSession().setPermissionMode(message.permissionMode);
        return;
      case 'approve':
        await this.requireSession().approvePlan(await this.planAsShown());
        return;
      case 'reject':
      case 'feedback':
        await this.actions.rejectWithFeedback();
        return;
      case 'openPlan':
        return this.actions.openPlan();
      case 'inputFocus':
        await vscode.commands.executeCommand('setContext', 'planLsp.chatFocused', message.focused);
        return;
      case 'newSession':
        return this.actions.newSession();
      case 'compact':
        return this.compact();
      case 'testConnection':
        return this.actions.testConnection();
      case 'showLog':
        this.output.show(true);
        return;
      case 'retryStart':
        return this.restart();
      case 'showProposal':
        await this.previews.showProposal(message.requestId);
        return;
      case 'openFile':
        return this.previews.openFile(message.path);
      case 'diffRun':
        return this.previews.showRunChanges(message.runId, message.path);
      case 'revertTo':
        return this.timeline.revert(message.checkpointId);
      case 'redo':
        return this.timeline.redo();
      case 'mentionFiles':
        await this.chat.post({ type: 'mentionFiles', files: await this.editorContext.files() });
        return;
      case 'attachSelection': {
        const selection = this.editorContext.selection();
        if (selection) await this.chat.post({ type: 'attachment', selection });
        else void vscode.window.showInformationMessage('Plan LSP: select some lines in an editor first.');
        return;
      }
      default:
        return this.onWebviewAction(message);
    }
  }

  dispose(): void {
    void this.stop();
    this.documentLog?.dispose();
    this.editorContext.dispose();
    this.chat.dispose();
    this.statusBar.dispose();
    this.output.dispose();
  }
}

/** The folder's URI as the server names it (it resolves symbolic links). */
function workspaceUriOf(uri: vscode.Uri): string {
  try {
    return vscode.Uri.file(fs.realpathSync(uri.fsPath)).toString();
  } catch {
    return uri.toString();
  }
}
