/**
 * What the server asks the user, and answers from the editor: permission (an edit shows its
 * proposed change as a diff, with Allow / Deny in the chat card and in the diff's title bar),
 * questions, and saving a buffer the server edited.
 */
import * as vscode from 'vscode';
import type { ChatViewProvider } from './chatView';
import type { EditPreviews } from './editPreviews';
import {
  AskUserParams,
  AskUserResult,
  DISMISSED_PERMISSION,
  RequestPermissionParams,
  RequestPermissionResult,
  permissionOptions,
} from './protocol';

export interface RequestHost {
  readonly output: vscode.OutputChannel;
  setContext(key: string, value: boolean): void;
}

export class UserRequests {
  constructor(
    private readonly chat: ChatViewProvider,
    private readonly previews: EditPreviews,
    private readonly host: RequestHost,
  ) {}

  async askPermission(params: RequestPermissionParams, token: vscode.CancellationToken): Promise<RequestPermissionResult> {
    const requestId = this.chat.newRequestId('perm');
    const path = this.previews.track(requestId, params);
    this.host.setContext('planLsp.proposalPending', path !== null);
    let optionId: string = DISMISSED_PERMISSION.optionId;
    try {
      if (this.chat.visible) {
        const answer = this.chat.askPermission(requestId, params, path, token);
        if (path) void this.previews.showProposal(requestId);
        optionId = (await answer).optionId;
        return { optionId };
      }
      if (path) await this.previews.showProposal(requestId);
      const options = permissionOptions(params);
      const choice = await vscode.window.showInformationMessage(
        `Plan LSP: allow ${params.tool}?`,
        { modal: true, detail: params.summary },
        ...options.map((o) => o.label),
      );
      optionId = options.find((o) => o.label === choice)?.optionId ?? DISMISSED_PERMISSION.optionId;
      // Keep the decision in the chat history too.
      this.chat.dispatch({ type: 'permissionRequest', requestId, params, path });
      this.chat.dispatch({ type: 'permissionAnswered', requestId, optionId });
      return { optionId };
    } finally {
      this.previews.settle(requestId, params.runId ?? null, optionId.startsWith('allow'));
      this.host.setContext('planLsp.proposalPending', false);
    }
  }

  /** The server edited an open buffer the user had not changed: save it, so the disk holds
   * the edit (auto-save off is the desktop default) without the file changing under the
   * editor. */
  async saveDocument(uri: string): Promise<boolean> {
    const target = vscode.Uri.parse(uri);
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.scheme === 'file' && d.uri.fsPath === target.fsPath);
    if (!doc) return false;
    if (!doc.isDirty) return true;
    const saved = (await doc.save()) && !doc.isDirty;
    this.host.output.appendLine(`${saved ? 'Saved' : 'Could not save'} ${doc.uri.fsPath} after the server's edit.`);
    return saved;
  }

  /** Allow / Deny from the proposal diff's title bar. */
  answerProposal(allow: boolean): void {
    const requestId = this.previews.requestFor(vscode.window.activeTextEditor?.document.uri);
    if (!requestId || !this.chat.isPending(requestId)) {
      void vscode.window.showInformationMessage('Plan LSP: this change is no longer waiting for an answer.');
      return;
    }
    // Answering closes the proposal's diff once the call has run (EditPreviews.settle).
    this.chat.answerPermission(requestId, allow ? 'allow_once' : 'reject_once');
  }

  async askUser(params: AskUserParams, token: vscode.CancellationToken): Promise<AskUserResult> {
    if (this.chat.visible) return this.chat.askUser(params, token);
    const answers: Record<string, string[]> = {};
    for (const question of params.questions ?? []) {
      if (token.isCancellationRequested) break;
      const picked = await vscode.window.showQuickPick(question.options, { title: question.text, canPickMany: Boolean(question.multiple), ignoreFocusOut: true }, token);
      if (Array.isArray(picked)) answers[question.id] = picked;
      else if (typeof picked === 'string') answers[question.id] = [picked];
    }
    return { answers };
  }
}
