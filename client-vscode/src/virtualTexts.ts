/**
 * Read-only virtual documents under the `plan-lsp-text` scheme: an old plan revision, the text
 * an edit proposes, a file as it was before a run. Shown with `vscode.diff`.
 */
import * as vscode from 'vscode';

export const TEXT_SCHEME = 'plan-lsp-text';

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

/** Texts are small and short-lived, but a long session should not keep every one forever. */
const MAX_TEXTS = 60;

export class VirtualTexts implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();
  private counter = 0;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.path) ?? '';
  }

  /** A URI that serves `text`; `fileName` keeps the language mode of the real file. */
  uriFor(label: string, fileName: string, text: string): vscode.Uri {
    const key = `/${++this.counter}/${label}/${fileName}`;
    this.texts.set(key, text);
    if (this.texts.size > MAX_TEXTS) this.texts.delete(this.texts.keys().next().value as string);
    return vscode.Uri.from({ scheme: TEXT_SCHEME, path: key });
  }

  /** "Compare with previous revision" of PLAN.md. A URI given as text is used as it is. */
  async compare(raw: unknown): Promise<void> {
    const args = parseCompareArgs(Array.isArray(raw) ? raw[0] : raw);
    if (!args) {
      void vscode.window.showErrorMessage('Plan LSP: compare needs {previous, current} texts.');
      return;
    }
    const asUri = (label: string, text: string): vscode.Uri =>
      /^[a-z][\w+.-]*:\/\//i.test(text) && !text.includes('\n') ? vscode.Uri.parse(text) : this.uriFor(label, 'PLAN.md', text);
    await vscode.commands.executeCommand(
      'vscode.diff', asUri('previous', args.previous), asUri('current', args.current), args.title ?? 'PLAN.md: previous ↔ current revision',
    );
  }
}
