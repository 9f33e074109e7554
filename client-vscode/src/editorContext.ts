/**
 * What the chat can add to a prompt from the editor: the workspace's files for `@` mentions
 * (bounded), and the active editor's selection (its file, lines and text, capped). The chat
 * builds the prompt's text from them (webview/promptContext.ts); the server gets plain text.
 */
import * as vscode from 'vscode';
import type { HostToWebview } from './webview/messages';
import { MAX_MENTION_FILES, SelectionContext, capSelection } from './webview/promptContext';

/** Never offered to `@`: dependencies, build output, VCS and plan-lsp's own folders. */
const EXCLUDE = '**/{node_modules,.git,.hg,.svn,.plan-lsp,__pycache__,.venv,venv,.tox,.mypy_cache,.pytest_cache,dist,out,build,target}/**';

export interface SelectionPlace {
  path: string;
  startLine: number;
  endLine: number;
}

function editorPath(uri: vscode.Uri): string | null {
  if (uri.scheme === 'untitled') return uri.path;
  if (uri.scheme !== 'file') return null;
  return vscode.workspace.asRelativePath(uri, false);
}

/** The selection's lines, 1-based, inclusive (a selection ending at a line's start does not
 * take that line). */
function lines(selection: vscode.Selection): { startLine: number; endLine: number } {
  const end = selection.end.character === 0 && selection.end.line > selection.start.line ? selection.end.line - 1 : selection.end.line;
  return { startLine: selection.start.line + 1, endLine: end + 1 };
}

export class EditorContext implements vscode.Disposable {
  private readonly disposables: vscode.Disposable[] = [];
  private lastPlace = '';
  /** The last text editor that was active: the focus in the chat may leave none active. */
  private last: vscode.TextEditor | undefined;

  constructor(private readonly post: (message: HostToWebview) => void) {
    this.disposables.push(
      vscode.window.onDidChangeTextEditorSelection(() => this.publish()),
      vscode.window.onDidChangeActiveTextEditor(() => this.publish()),
    );
  }

  /** The active text editor, or the last one while it is still on screen. */
  private editor(): vscode.TextEditor | undefined {
    const active = vscode.window.activeTextEditor;
    if (active) this.last = active;
    else if (this.last && !vscode.window.visibleTextEditors.includes(this.last)) this.last = undefined;
    return this.last;
  }

  /** Where the editor's selection is, or null (none, empty, or not a file). */
  place(): SelectionPlace | null {
    const editor = this.editor();
    if (!editor || editor.selection.isEmpty) return null;
    const path = editorPath(editor.document.uri);
    return path === null ? null : { path, ...lines(editor.selection) };
  }

  /** Tells the chat where the selection is now (when that changed, or `force`). */
  publish(force = false): void {
    const place = this.place();
    const key = JSON.stringify(place);
    if (!force && key === this.lastPlace) return;
    this.lastPlace = key;
    this.post({ type: 'editorSelection', selection: place });
  }

  /** The selection with its text (capped), or null when there is none. */
  selection(): SelectionContext | null {
    const editor = this.editor();
    const place = this.place();
    if (!editor || !place) return null;
    const capped = capSelection(editor.document.getText(editor.selection));
    return { ...place, language: editor.document.languageId, ...capped };
  }

  /** The workspace's files, relative to it, at most MAX_MENTION_FILES. */
  async files(): Promise<string[]> {
    if (!vscode.workspace.workspaceFolders?.length) return [];
    const uris = await vscode.workspace.findFiles('**/*', EXCLUDE, MAX_MENTION_FILES);
    return uris.map((uri) => vscode.workspace.asRelativePath(uri, false)).sort();
  }

  dispose(): void {
    for (const d of this.disposables.splice(0)) d.dispose();
  }
}
