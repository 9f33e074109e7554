/**
 * A record of what the editor holds of plan documents, for end-to-end tests and debugging.
 * When the environment variable PLAN_LSP_DOCUMENT_LOG names a file, the extension appends one
 * JSON line to it:
 *   - per plan document opened or changed: `{t, event: "open" | "change", path, version, text,
 *     visible}` (`t` in seconds since the epoch; `visible`: an editor on screen shows it);
 *   - per plan approved: `{t, event: "approved", path, sha256, text}` (the server's record).
 * A plan document is a Markdown file under a `.plan-lsp` folder. Without the variable nothing
 * is registered and nothing is written.
 */
import * as fs from 'node:fs';
import * as vscode from 'vscode';
import type { SessionState } from './wireTypes';

export const DOCUMENT_LOG_ENV = 'PLAN_LSP_DOCUMENT_LOG';

/** Whether a file path names a plan document (a Markdown file under `.plan-lsp/`). */
export function isPlanPath(fsPath: string): boolean {
  return /[\\/]\.plan-lsp[\\/](.+[\\/])?[^\\/]+\.md$/i.test(fsPath);
}

/** One line of the log. */
export function logLine(record: Record<string, unknown>, now = Date.now()): string {
  return `${JSON.stringify({ t: now / 1000, ...record })}\n`;
}

export class DocumentLog implements vscode.Disposable {
  private readonly disposables: vscode.Disposable[] = [];
  private approved = '';

  private constructor(private readonly file: string) {
    const note = (document: vscode.TextDocument, event: 'open' | 'change') => {
      if (document.uri.scheme !== 'file' || !isPlanPath(document.uri.fsPath)) return;
      const path = document.uri.fsPath;
      const visible = vscode.window.visibleTextEditors.some((e) => e.document.uri.toString() === document.uri.toString());
      this.write({ event, path, version: document.version, text: document.getText(), visible });
    };
    this.disposables.push(
      vscode.workspace.onDidOpenTextDocument((d) => note(d, 'open')),
      vscode.workspace.onDidChangeTextDocument((e) => note(e.document, 'change')),
    );
  }

  /** The log the environment asks for, or undefined. */
  static fromEnvironment(env: NodeJS.ProcessEnv = process.env): DocumentLog | undefined {
    const file = env[DOCUMENT_LOG_ENV];
    return file ? new DocumentLog(file) : undefined;
  }

  /** Notes a newly approved plan. */
  state(state: SessionState): void {
    const plan = state.approvedPlan;
    if (!plan || plan.sha256 === this.approved) return;
    this.approved = plan.sha256;
    this.write({ event: 'approved', path: plan.path, sha256: plan.sha256, text: plan.text });
  }

  private write(record: Record<string, unknown>): void {
    try {
      fs.appendFileSync(this.file, logLine(record));
    } catch {
      /* a record for tests: never a reason to fail the editor */
    }
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
