/** The status bar item: the mode, the permission mode and the plan-mode shell protection, or
 * that the server is starting / has a problem. Click toggles Plan/Build (or shows the log). */
import * as vscode from 'vscode';
import type { SessionState } from './protocol';
import { statusBarText, statusBarTooltip } from './statusText';

export class ModeStatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('planLsp.mode', vscode.StatusBarAlignment.Left, 100);

  constructor() {
    this.item.name = 'Plan LSP mode';
    this.starting();
    this.item.show();
  }

  starting(): void {
    this.item.text = '$(sync~spin) Plan LSP';
    this.item.tooltip = 'Plan LSP: starting the server';
    this.item.command = 'planLsp.client.openChat';
    this.item.backgroundColor = undefined;
  }

  error(message: string): void {
    this.item.text = '$(error) Plan LSP';
    this.item.tooltip = `${message}\nClick to show the log`;
    this.item.command = 'planLsp.client.showLog';
    this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.errorBackground');
  }

  show(state: SessionState): void {
    this.item.text = statusBarText(state);
    this.item.tooltip = statusBarTooltip(state);
    this.item.command = 'planLsp.client.toggleMode';
    this.item.backgroundColor = state.mode === 'build' ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
  }

  dispose(): void {
    this.item.dispose();
  }
}
