/**
 * "Compare with previous revision": two texts shown side by side in `vscode.diff` through
 * virtual read-only documents under the `plan-lsp-rev` scheme.
 */
import * as vscode from 'vscode';

export const REVISION_SCHEME = 'plan-lsp-rev';

export interface CompareArgs {
  previous: string;
  current: string;
  title?: string;
}

/** Accepts `{previous, current, title?}` and the `previousText`/`currentText` spelling. */
export function parseCompareArgs(raw: unknown): CompareArgs | undefined {
  if (!raw || typeof raw !== 'object') return undefined;
  const o = raw as Record<string, unknown>;
  const previous = o.previous ?? o.previousText;
  const current = o.current ?? o.currentText;
  if (typeof previous !== 'string' || typeof current !== 'string') return undefined;
  return { previous, current, title: typeof o.title === 'string' ? o.title : undefined };
}

export class RevisionContentProvider implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();
  private counter = 0;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.path) ?? '';
  }

  /** A URI under the scheme that serves `text`; a URI given as text is used as it is. */
  uriFor(label: string, text: string): vscode.Uri {
    if (/^[a-z][\w+.-]*:\/\//i.test(text) && !text.includes('\n')) return vscode.Uri.parse(text);
    const key = `/${++this.counter}/${label}/PLAN.md`;
    this.texts.set(key, text);
    // Old revisions are small, but a long session should not keep every one forever.
    if (this.texts.size > 40) this.texts.delete(this.texts.keys().next().value as string);
    return vscode.Uri.from({ scheme: REVISION_SCHEME, path: key });
  }

  async compare(raw: unknown): Promise<void> {
    const args = parseCompareArgs(Array.isArray(raw) ? raw[0] : raw);
    if (!args) {
      void vscode.window.showErrorMessage('Plan LSP: compare needs {previous, current} texts.');
      return;
    }
    const left = this.uriFor('previous', args.previous);
    const right = this.uriFor('current', args.current);
    await vscode.commands.executeCommand('vscode.diff', left, right, args.title ?? 'PLAN.md: previous ↔ current revision');
  }
}
