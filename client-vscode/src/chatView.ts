/**
 * The sidebar chat: a webview view whose state lives on the host side (the same reducer as
 * the webview), so hiding, re-showing or re-creating the view loses nothing. Permission and
 * question requests from the server are answered here while the view is visible.
 */
import * as vscode from 'vscode';
import { ChatEvent, ChatState, initialChatState, reduce } from './webview/chatState';
import type { HostToWebview, WebviewToHost } from './webview/messages';
import type {
  AskUserParams,
  AskUserResult,
  RequestPermissionParams,
  RequestPermissionResult,
} from './protocol';
import { DISMISSED_PERMISSION } from './protocol';

export const CHAT_VIEW_ID = 'planLsp.chat';

export interface ChatActions {
  handle(message: WebviewToHost): void | Promise<void>;
}

interface Pending<T> {
  resolve(value: T): void;
}

export class ChatViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  private view: vscode.WebviewView | undefined;
  private state: ChatState = initialChatState();
  private nextRequest = 1;
  private readonly pendingPermissions = new Map<string, Pending<RequestPermissionResult>>();
  private readonly pendingQuestions = new Map<string, Pending<AskUserResult>>();
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly extensionUri: vscode.Uri, private readonly actions: ChatActions) {}

  get chatState(): ChatState {
    return this.state;
  }

  /** True when the view is on screen, so requests can be answered inline. */
  get visible(): boolean {
    return this.view?.visible ?? false;
  }

  dispatch(event: ChatEvent): void {
    this.state = reduce(this.state, event);
    void this.post({ type: 'event', event });
  }

  /** Sends a message to the webview (dropped while there is none). */
  post(message: HostToWebview): Thenable<boolean> | undefined {
    return this.view?.webview.postMessage(message);
  }

  /** Called when a (re)created webview has loaded and taken the state. */
  onReady: () => void = () => undefined;

  focusInput(): void {
    void this.post({ type: 'focusInput' });
  }

  /** Gives the view the focus back after input boxes one of its buttons opened (VS Code leaves
   * the focus nowhere when they close): the webview puts it back on the control it left, or on
   * a card that appeared meanwhile. Not *Open Chat*: the prompt is not chosen for it. */
  focusBack(): void {
    if (this.view?.visible) void vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
  }

  /** Brings the view on screen (without taking the focus). */
  reveal(): void {
    this.view?.show(true);
  }

  /** The prompt takes the focus once the view has loaded (Open Chat before it resolved). */
  private focusWhenReady = false;

  /** *Open Chat*: shows the view and puts the focus in the prompt. */
  async open(): Promise<void> {
    this.focusWhenReady = this.view === undefined;
    await vscode.commands.executeCommand('workbench.view.extension.planLsp');
    await vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
    this.focusInput();
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const webview = view.webview;
    webview.options = {
      enableScripts: true,
      localResourceRoots: [vscode.Uri.joinPath(this.extensionUri, 'dist'), vscode.Uri.joinPath(this.extensionUri, 'media')],
    };
    webview.html = this.html(webview);
    this.disposables.push(
      webview.onDidReceiveMessage((message: WebviewToHost) => this.onMessage(message)),
      view.onDidDispose(() => {
        if (this.view === view) this.view = undefined;
      }),
      // Shown again (its icon, a keybinding, a command): typing goes to the prompt. The
      // webview moves its focus there only when the workbench gives the view the focus.
      view.onDidChangeVisibility(() => {
        if (view.visible) this.focusInput();
      }),
    );
  }

  private onMessage(message: WebviewToHost): void {
    switch (message.type) {
      case 'ready':
        // A (re)created webview starts from the host's copy of the state.
        void this.post({ type: 'event', event: { type: 'snapshot', state: this.state } });
        if (this.focusWhenReady) this.focusInput();
        this.focusWhenReady = false;
        this.onReady();
        return;
      case 'permissionAnswer':
        this.answerPermission(message.requestId, message.optionId);
        return;
      case 'questionAnswer':
        this.answerQuestion(message.requestId, message.answers);
        return;
      default:
        void Promise.resolve(this.actions.handle(message)).catch((err: unknown) =>
          this.dispatch({ type: 'update', update: { kind: 'error', message: String(err instanceof Error ? err.message : err) } }),
        );
    }
  }

  /** A fresh id for a permission or question request. */
  newRequestId(prefix: string): string {
    return `${prefix}-${this.nextRequest++}`;
  }

  /** Shows inline permission buttons and resolves with the user's choice. `path`: the file
   * whose proposed change can be shown as a diff. */
  askPermission(
    requestId: string,
    params: RequestPermissionParams,
    path: string | null,
    token: vscode.CancellationToken,
  ): Promise<RequestPermissionResult> {
    return new Promise((resolve) => {
      this.pendingPermissions.set(requestId, { resolve });
      this.dispatch({ type: 'permissionRequest', requestId, params, path });
      token.onCancellationRequested(() => this.answerPermission(requestId, DISMISSED_PERMISSION.optionId));
    });
  }

  /** Whether a permission request is still waiting for the user. */
  isPending(requestId: string): boolean {
    return this.pendingPermissions.has(requestId);
  }

  answerPermission(requestId: string, optionId: string): void {
    const pending = this.pendingPermissions.get(requestId);
    if (!pending) return;
    this.pendingPermissions.delete(requestId);
    this.dispatch({ type: 'permissionAnswered', requestId, optionId });
    pending.resolve({ optionId });
  }

  /** Shows a questionnaire card and resolves with the answers (empty when dismissed). */
  askUser(params: AskUserParams, token: vscode.CancellationToken): Promise<AskUserResult> {
    const requestId = this.newRequestId('q');
    return new Promise((resolve) => {
      this.pendingQuestions.set(requestId, { resolve });
      this.dispatch({ type: 'questionRequest', requestId, params });
      token.onCancellationRequested(() => this.answerQuestion(requestId, null));
    });
  }

  private answerQuestion(requestId: string, answers: Record<string, string[]> | null): void {
    const pending = this.pendingQuestions.get(requestId);
    if (!pending) return;
    this.pendingQuestions.delete(requestId);
    this.dispatch({ type: 'questionAnswered', requestId, answers });
    pending.resolve({ answers: answers ?? {} });
  }

  /** Answers every open request as dismissed (the server went away). */
  dismissPending(): void {
    for (const id of [...this.pendingPermissions.keys()]) this.answerPermission(id, DISMISSED_PERMISSION.optionId);
    for (const id of [...this.pendingQuestions.keys()]) this.answerQuestion(id, null);
  }

  private html(webview: vscode.Webview): string {
    const nonce = makeNonce();
    const script = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'dist', 'webview.js'));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'media', 'chat.css'));
    const csp = [
      "default-src 'none'",
      `style-src ${webview.cspSource}`,
      `script-src 'nonce-${nonce}'`,
      `img-src ${webview.cspSource} data:`,
      `font-src ${webview.cspSource}`,
    ].join('; ');
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style}">
<title>Plan LSP</title>
</head>
<body>
<div id="header">
  <div class="mode-switch" role="group" aria-label="Work mode (Alt+M toggles)">
    <button id="mode-plan" data-testid="mode-plan" aria-keyshortcuts="Alt+M" title="Plan: read-only research, then a plan to approve (Alt+M toggles)">Plan</button>
    <button id="mode-build" data-testid="mode-build" aria-keyshortcuts="Alt+M" title="Build: edits and commands, subject to permissions (Alt+M toggles)">Build</button>
  </div>
  <select id="permission-mode" data-testid="permission-mode" title="Permission mode"></select>
  <span class="spacer"></span>
  <button id="new-session" data-testid="new-session" class="secondary" title="Start a new session: clears the conversation">New session</button>
</div>
<div id="usage-bar" data-testid="usage-bar" hidden>
  <span id="usage" data-testid="usage"></span>
  <span class="spacer"></span>
  <button id="compact" data-testid="compact" class="secondary">Compact</button>
</div>
<div id="setup-card" data-testid="setup-card" hidden></div>
<div id="warnings" data-testid="warnings" hidden></div>
<div id="plan-panel" data-testid="plan-panel" hidden></div>
<div id="todos" data-testid="todos" hidden></div>
<div id="messages" data-testid="messages"></div>
<div id="composer">
  <div id="mentions" data-testid="mentions" role="listbox" hidden></div>
  <div id="context-bar" data-testid="context-bar" hidden></div>
  <textarea id="prompt" data-testid="prompt" rows="3" placeholder="Ask the agent… (@ names a file)" title="Enter sends, Shift+Enter starts a new line, @ names a file, Alt+M toggles Plan/Build" aria-label="Prompt"></textarea>
  <div class="buttons">
    <button id="send" data-testid="send">Send</button>
    <button id="stop" data-testid="stop" class="secondary">Stop</button>
  </div>
</div>
<script nonce="${nonce}" src="${script}"></script>
</body>
</html>`;
  }

  dispose(): void {
    this.dismissPending();
    for (const d of this.disposables.splice(0)) d.dispose();
  }
}

function makeNonce(): string {
  const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let nonce = '';
  for (let i = 0; i < 32; i++) nonce += chars.charAt(Math.floor(Math.random() * chars.length));
  return nonce;
}
