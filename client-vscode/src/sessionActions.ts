/**
 * What the user asks of the session from the chat and the commands: prompts and Stop, a new
 * session, the connection test, the plan and its review (comments on its lines), the
 * permission mode.
 */
import * as vscode from 'vscode';
import type { ChatViewProvider } from './chatView';
import { PERMISSION_MODES, PlanLspSession, PromptResult, SessionState, errorMessage } from './protocol';
import { permissionModeDetail, permissionModeLabel } from './permissionText';
import { feedbackBox, rejectArgs } from './rejectFeedback';
import { commentArgs, commentBox } from './planComment';
import type { Wire } from './wireTypes';

export interface ActionHost {
  readonly output: vscode.OutputChannel;
  readonly current: SessionState | undefined;
  readonly busy: boolean;
  requireSession(): PlanLspSession;
  setContext(key: string, value: boolean): void;
  /** The conversation was cleared (plan reveals start over). */
  sessionCleared(): void;
}

export class SessionActions {
  private promptRun: vscode.CancellationTokenSource | undefined;

  constructor(private readonly chat: ChatViewProvider, private readonly host: ActionHost) {}

  /** A prompt of this window is waiting for its run to end. */
  get prompting(): boolean {
    return this.promptRun !== undefined;
  }

  /** Stops waiting for the prompt's run (the server is going away). */
  abandonPrompt(): void {
    this.promptRun?.cancel();
  }

  /** Sends a prompt. One that fails (the server is not running, or the model server refuses
   * it) is marked failed in the chat, which puts its text back and offers Retry. */
  async sendPrompt(text: string): Promise<void> {
    this.chat.dispatch({ type: 'userPrompt', text });
    await this.awaitRun((session, token) => session.prompt(text, token));
  }

  /** Runs again the run the model server failed after it had gone some steps (the error's
   * Retry): the server goes on from its last complete step; a refusal shows as an error. */
  async retryRun(): Promise<void> {
    await this.awaitRun((session, token) => session.retry(token));
  }

  private async awaitRun(start: (session: PlanLspSession, token: vscode.CancellationToken) => Promise<PromptResult>): Promise<void> {
    const run = new vscode.CancellationTokenSource();
    this.promptRun = run;
    try {
      const session = this.host.requireSession();
      const result = await start(session, run.token);
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
    const session = this.host.requireSession();
    try {
      await session.cancel(this.host.current?.runId ?? undefined);
    } finally {
      this.promptRun?.cancel();
    }
  }

  /** New session: clears the conversation; the user keeps or drops the approved plan. */
  async newSession(): Promise<void> {
    const session = this.host.requireSession();
    if (this.host.busy) {
      void vscode.window.showWarningMessage('Plan LSP: stop the current run first (Stop), then start a new session.');
      return;
    }
    const approved = this.host.current?.approvedPlan;
    const keep = 'Keep Approved Plan';
    const drop = approved ? 'Drop Approved Plan' : 'New Session';
    const choice = await vscode.window.showWarningMessage(
      'Start a new session?',
      {
        modal: true,
        detail: approved
          ? 'The conversation is cleared. The approved plan can stay (the next runs follow it) or go.'
          : 'The conversation is cleared; the agent starts without it.',
      },
      ...(approved ? [keep, drop] : [drop]),
    );
    if (!choice) return;
    const state = await session.newSession(choice === keep);
    this.host.sessionCleared();
    this.chat.dispatch({ type: 'sessionCleared', state });
    this.host.output.appendLine(`New session${approved ? (choice === keep ? ' (approved plan kept)' : ' (approved plan dropped)') : ''}.`);
  }

  async testConnection(): Promise<void> {
    const session = this.host.requireSession();
    this.chat.dispatch({ type: 'connectionTest', testing: true, result: null });
    try {
      const result = await session.testConnection();
      this.host.output.appendLine(`Test connection: ${result.ok ? 'ok' : `failed${result.code ? ` (${result.code})` : ''}`} — ${result.message}`);
      this.chat.dispatch({ type: 'connectionTest', testing: false, result });
      this.host.setContext('planLsp.modelReady', result.ok);
    } catch (err) {
      const message = `The server could not test the connection: ${errorMessage(err)}`;
      this.chat.dispatch({ type: 'connectionTest', testing: false, result: { ok: false, code: null, message } });
    }
  }

  /** The server's "Compare with previous revision" lens answers with the old revision's
   * file; show it against the live PLAN.md buffer. */
  async diffWithPrevious(result: unknown): Promise<void> {
    const previousUri = result && typeof result === 'object' ? (result as { previousUri?: unknown }).previousUri : undefined;
    const planUri = this.host.current?.planUri;
    if (typeof previousUri !== 'string' || !planUri) return;
    await vscode.commands.executeCommand(
      'vscode.diff', vscode.Uri.parse(previousUri), vscode.Uri.parse(planUri), 'PLAN.md: previous revision ↔ current',
    );
  }

  async openPlan(): Promise<void> {
    const uri = this.host.current?.planUri;
    if (!uri) {
      void vscode.window.showInformationMessage('Plan LSP: there is no plan yet.');
      return;
    }
    await vscode.window.showTextDocument(vscode.Uri.parse(uri), { preview: false });
  }

  /** Reject… (a submitted plan) or Revise… (a rejected one): asks for feedback. Escape
   * cancels; empty rejects without feedback (Revise…: cancels); text starts a revision.
   * The chat buttons, the palette commands and the server's lens all come here. */
  async rejectWithFeedback(): Promise<unknown> {
    const revising = this.host.current?.planStatus === 'rejected';
    const input = await vscode.window.showInputBox({ ...feedbackBox(revising), ignoreFocusOut: true });
    const args = rejectArgs(input, revising);
    if (!args) return undefined;
    return this.host.requireSession().rejectPlan(args);
  }

  /** "Comment on these lines…": asks for the comment; Escape or an empty box sends nothing,
   * a comment is sent with the lines (`send`: the server command). */
  async commentOnPlan(args: unknown[], send: (args: unknown[]) => Promise<unknown>): Promise<unknown> {
    const box = commentBox((args[0] as Wire.CommentOnPlanParams).range);
    const input = await vscode.window.showInputBox({ ...box, ignoreFocusOut: true });
    const sent = commentArgs(args, input);
    return sent ? send(sent) : undefined;
  }

  async pickPermissionMode(): Promise<void> {
    const current = this.host.current?.permissionMode;
    const picked = await vscode.window.showQuickPick(
      PERMISSION_MODES.map((mode) => ({
        label: permissionModeLabel(mode),
        description: mode === current ? 'current' : undefined,
        detail: permissionModeDetail(mode),
        mode,
      })),
      { title: 'Plan LSP: when should the agent ask you?' },
    );
    if (picked) await this.host.requireSession().setPermissionMode(picked.mode);
  }
}
