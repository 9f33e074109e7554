/**
 * The first Markdown document of a window costs the editor a second or more: the extension
 * host activates every extension waiting for Markdown (`onLanguage:markdown`: VS Code's own
 * Markdown language features, and whatever the user installed), and the workbench loads the
 * Markdown grammar. Paid when the first plan opens, that cost holds up the plan streaming
 * into PLAN.md. So it is paid once the server runs, before any plan: a read-only Markdown
 * document of this extension's own (never shown, not a file) is opened then.
 */
import * as vscode from 'vscode';
import type { VirtualTexts } from './virtualTexts';

export async function prepareForMarkdown(texts: VirtualTexts, log: (line: string) => void): Promise<void> {
  try {
    const document = await vscode.workspace.openTextDocument(texts.uriFor('prepare', 'PLAN.md', ''));
    if (document.languageId !== 'markdown') log(`Markdown support not prepared: the document is ${document.languageId}`);
  } catch (err) {
    log(`Markdown support not prepared: ${err instanceof Error ? err.message : String(err)}`);
  }
}
