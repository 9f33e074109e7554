/**
 * See before you allow: an edit's permission request opens `vscode.diff` of the texts the
 * server sent with it (its `change`: the file's text before, the exact text the tool writes,
 * both computed by the tool's own code), with Allow / Deny in the chat card and in the diff
 * editor's title bar. And after a run: the diff of what the run changed in a file, against a
 * copy taken when the run first touched it.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { editPath, requestDiff, textBeforeCall } from './proposal';
import type { RequestPermissionParams } from './protocol';
import { VirtualTexts } from './virtualTexts';

/** Copies kept per (run, file); old runs fall out first. */
const MAX_SNAPSHOTS = 200;

function closeDiffs(modified: Set<string>): void {
  if (modified.size === 0) return;
  const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((t) =>
    t.input instanceof vscode.TabInputTextDiff && modified.has(t.input.modified.toString()));
  if (tabs.length) void vscode.window.tabGroups.close(tabs, true);
}

export class EditPreviews {
  private readonly before = new Map<string, string | null>();
  /** Open proposals: the proposed text's URI → permission request id. */
  private readonly proposals = new Map<string, string>();
  private readonly requests = new Map<string, { tool: string; file: string; before: string | null; after: string }>();
  /** Diffs of allowed proposals, closed when their call ends: (run, tool) → proposed URIs. */
  private readonly closeAfter = new Map<string, Set<string>>();

  constructor(private readonly texts: VirtualTexts, private readonly root: () => string | undefined) {}

  /** The absolute path of a tool's `path` argument (relative to the workspace folder). */
  resolve(file: string): string | undefined {
    if (path.isAbsolute(file)) return path.normalize(file);
    const root = this.root();
    return root ? path.join(root, file) : undefined;
  }

  /** The text the editor holds for `file` (an open buffer wins over the disk), or null. */
  currentText(file: string): string | null {
    const open = vscode.workspace.textDocuments.find((d) => d.uri.scheme === 'file' && d.uri.fsPath === file);
    if (open) return open.getText();
    try {
      return fs.readFileSync(file, 'utf8');
    } catch {
      return null;
    }
  }

  /** Remembers the file's text before the first edit call of a run touches it. */
  noteToolCall(runId: string | null, tool: string, args: Record<string, unknown> | null): void {
    const rel = editPath(tool, args);
    const file = rel ? this.resolve(rel) : undefined;
    if (!runId || !file || !args) return;
    const key = `${runId}\u0000${file}`;
    if (this.before.has(key)) return;
    const seen = textBeforeCall(tool, args, this.currentText(file));
    if (!seen.known) return;
    this.before.set(key, seen.text);
    if (this.before.size > MAX_SNAPSHOTS) this.before.delete(this.before.keys().next().value as string);
  }

  /** Registers a permission request; returns the file (as the call names it) when the
   * request carries a change to show. Its before-text is also the run's copy of the file
   * when the run had not touched it yet. */
  track(requestId: string, params: RequestPermissionParams): string | null {
    const diff = requestDiff(params.change);
    if (!diff.ok) return null;
    const file = path.normalize(vscode.Uri.parse(diff.uri).fsPath);
    this.requests.set(requestId, { tool: params.tool, file, before: diff.before, after: diff.after });
    const runId = params.runId;
    if (runId && !this.before.has(`${runId}\u0000${file}`)) {
      this.before.set(`${runId}\u0000${file}`, diff.before);
      if (this.before.size > MAX_SNAPSHOTS) this.before.delete(this.before.keys().next().value as string);
    }
    const named = editPath(params.tool, params.arguments ?? null);
    return named ?? path.basename(file);
  }

  /**
   * The request was answered. A denied proposal's diff closes now; an allowed one stays until
   * the call has run (`callEnded`), so what was allowed stays in view while it is written.
   */
  settle(requestId: string, runId: string | null, allowed: boolean): void {
    const request = this.requests.get(requestId);
    this.requests.delete(requestId);
    const uris = new Set<string>();
    for (const [uri, id] of this.proposals) {
      if (id !== requestId) continue;
      this.proposals.delete(uri);
      uris.add(uri);
    }
    if (!allowed || !request) {
      closeDiffs(uris);
      return;
    }
    const key = `${runId}\u0000${request.tool}`;
    this.closeAfter.set(key, new Set([...(this.closeAfter.get(key) ?? []), ...uris]));
  }

  /** A call's result arrived: the diffs of its allowed proposals close. */
  callEnded(runId: string | null, tool: string): void {
    const key = `${runId}\u0000${tool}`;
    const uris = this.closeAfter.get(key);
    if (!uris) return;
    this.closeAfter.delete(key);
    closeDiffs(uris);
  }

  /** The request a proposal editor belongs to (for the Allow / Deny title buttons). */
  requestFor(uri: vscode.Uri | undefined): string | undefined {
    return uri ? this.proposals.get(uri.toString()) : undefined;
  }

  /** Opens the diff of the request's before-text against its after-text (the server's). */
  async showProposal(requestId: string): Promise<boolean> {
    const request = this.requests.get(requestId);
    if (!request) return false;
    const { tool, file, before, after } = request;
    const name = path.basename(file);
    const left = this.texts.uriFor(before === null ? 'new-file' : `now-${requestId}`, name, before ?? '');
    const right = this.texts.uriFor(`proposed-${requestId}`, name, after);
    this.proposals.set(right.toString(), requestId);
    await vscode.commands.executeCommand('vscode.diff', left, right, `${name}: now ↔ proposed by ${tool} (allow?)`, {
      preview: true,
      preserveFocus: true,
    });
    return true;
  }

  /** Opens the diff of a file before the run against the file now. */
  async showRunChanges(runId: string, rel: string): Promise<void> {
    const file = this.resolve(rel);
    const key = file ? `${runId}\u0000${file}` : '';
    if (!file || !this.before.has(key)) {
      void vscode.window.showInformationMessage(
        `Plan LSP: no copy of ${rel} from before that run (copies are kept in this window only). Use the Source Control view to compare.`,
      );
      return;
    }
    const name = path.basename(file);
    const left = this.texts.uriFor(`before-${runId}`, name, this.before.get(key) ?? '');
    await vscode.commands.executeCommand('vscode.diff', left, vscode.Uri.file(file), `${name}: before the run ↔ now`, { preview: true });
  }

  async openFile(rel: string): Promise<void> {
    const file = this.resolve(rel);
    if (!file) return;
    await vscode.window.showTextDocument(vscode.Uri.file(file), { preview: false });
  }
}
