/**
 * Entry point: the controller (server + session + views), the commands, the setup flows and
 * the settings watcher.
 */
import * as vscode from 'vscode';
import { CHAT_VIEW_ID } from './chatView';
import { Controller, currentSettings } from './controller';
import { prepareForMarkdown } from './markdownWarmup';
import { errorMessage } from './protocol';
import { showPlans, type PlansUi } from './plansList';
import { launchSettingsChanged } from './settings';
import { API_KEY_SECRET, applyPreset, askApiKey, changeModel, openSetting, pickPreset, presetById } from './setup';
import { TEXT_SCHEME } from './virtualTexts';
import { welcomeTabs } from './walkthrough';
import { CARD_COMMANDS, WALKTHROUGH_ID } from './webview/setupCard';
import type { WebviewToHost } from './webview/messages';

/** The chat opens by itself once in each workspace (workspace state): a second folder too. */
const FIRST_RUN_KEY = 'planLsp.chatShownHere';

let controller: Controller | undefined;

function guarded<A extends unknown[]>(fn: (...args: A) => unknown): (...args: A) => Promise<void> {
  return async (...args: A) => {
    try {
      await fn(...args);
    } catch (err) {
      void vscode.window.showErrorMessage(`Plan LSP: ${errorMessage(err)}`);
    }
  };
}

/**
 * Setup actions change settings or the key, then restart the server and test the connection,
 * so the card shows at once whether the model answers. Setup actions and settings changes run
 * one at a time: a change made by a setup action is already in force when its settings event
 * is looked at, so it restarts the server once, not once per setting written.
 */
class Setup {
  private queue: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly c: Controller, private readonly context: vscode.ExtensionContext) {}

  private serialized(fn: () => Promise<void>): Promise<void> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async restartAndTest(): Promise<void> {
    if (this.c.busy) {
      const choice = await vscode.window.showInformationMessage('Plan LSP: settings changed. Restart the server now? The current run stops.', 'Restart');
      if (!choice) return;
    }
    await this.c.restart();
    if (this.c.current) await this.c.actions.testConnection();
  }

  /** `back`: called once the input boxes of `change` closed, answered or not. */
  private thenRestart(change: () => Promise<boolean>, back?: () => void): Promise<void> {
    return this.serialized(async () => {
      const changed = await change().finally(() => back?.());
      if (changed) await this.restartAndTest();
    });
  }

  preset(id?: string, back?: () => void): Promise<void> {
    return this.thenRestart(async () => {
      const preset = id ? presetById(id) : await pickPreset();
      if (!preset) return false;
      // The key first when the server wants one, then the model from its list (modelChoice.ts).
      return applyPreset(preset, currentSettings().settings, this.context.secrets);
    }, back);
  }

  model(back?: () => void): Promise<void> {
    return this.thenRestart(() => changeModel(currentSettings().settings, this.context.secrets), back);
  }

  apiKey(back?: () => void): Promise<void> {
    return this.thenRestart(() => askApiKey(this.context.secrets), back);
  }

  clearApiKey(): Promise<void> {
    return this.thenRestart(async () => {
      await this.context.secrets.delete(API_KEY_SECRET);
      return true;
    });
  }

  /** Settings edited anywhere: warn about workspace values, restart when user values changed. */
  onConfigurationChanged(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      void this.serialized(async () => {
        const read = currentSettings();
        const launched = this.c.launchedWith;
        if (launched && !launchSettingsChanged(launched, read.settings)) {
          // Nothing the server uses changed (e.g. only ignored workspace values): say so.
          this.c.reportSettings(read);
          return;
        }
        await this.restartAndTest();
      });
    }, 400);
  }
}

/** "Show Plans": VS Code's quick pick and editor for plansList.ts. */
const plansUi: PlansUi = {
  pick: (items, placeHolder) => Promise.resolve(vscode.window.showQuickPick(items, { placeHolder, matchOnDescription: true, matchOnDetail: true })),
  open: async (uri) => void (await vscode.window.showTextDocument(vscode.Uri.parse(uri), { preview: false })),
  info: (message) => void vscode.window.showInformationMessage(message),
};

/** Shows the walkthrough, in place of VS Code's Welcome page when it is open (walkthrough.ts). */
async function openWalkthrough(): Promise<void> {
  const welcome = welcomeTabs(vscode.window.tabGroups.all.flatMap((group) => group.tabs));
  if (welcome.length) await vscode.window.tabGroups.close(welcome, true);
  await vscode.commands.executeCommand('workbench.action.openWalkthrough', WALKTHROUGH_ID, false);
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const c = new Controller(context);
  controller = c;
  const setup = new Setup(c, context);
  // A chat button's input boxes closed: the focus goes back to the chat (VS Code leaves it
  // nowhere), which puts it on that button or on the card that appeared meanwhile.
  const backToChat = (): void => c.chat.focusBack();
  // The commands a card may run (CARD_COMMANDS), each a set-up flow.
  const cardFlows: Record<string, () => Promise<void>> = {
    [CARD_COMMANDS.setApiKey]: () => setup.apiKey(backToChat),
    [CARD_COMMANDS.setupModel]: () => setup.preset(undefined, backToChat),
    [CARD_COMMANDS.changeModel]: () => setup.model(backToChat),
  };
  c.onWebviewAction = async (message: WebviewToHost) => {
    switch (message.type) {
      case 'applyPreset':
        return setup.preset(message.preset, backToChat);
      case 'openSetting':
        return openSetting(message.setting);
      case 'runCommand':
        return Object.hasOwn(cardFlows, message.command) ? cardFlows[message.command]() : undefined;
      case 'openWalkthrough':
        return openWalkthrough();
      default:
        return;
    }
  };
  context.subscriptions.push(
    c,
    vscode.window.registerWebviewViewProvider(CHAT_VIEW_ID, c.chat, { webviewOptions: { retainContextWhenHidden: true } }),
    vscode.workspace.registerTextDocumentContentProvider(TEXT_SCHEME, c.texts),
    vscode.commands.registerCommand('planLsp.client.toggleMode', guarded(() => c.requireSession().toggleMode())),
    vscode.commands.registerCommand('planLsp.client.setPermissionMode', guarded(() => c.actions.pickPermissionMode())),
    vscode.commands.registerCommand('planLsp.client.approve', guarded((args?: unknown) =>
      args && typeof args === 'object' ? c.requireSession().approvePlan(args as object) : c.approveFromPalette())),
    vscode.commands.registerCommand('planLsp.client.reject', guarded(() => c.actions.rejectWithFeedback())),
    vscode.commands.registerCommand('planLsp.client.rejectWithFeedback', guarded(() => c.actions.rejectWithFeedback())),
    vscode.commands.registerCommand('planLsp.client.cancel', guarded(() => c.actions.cancel())),
    vscode.commands.registerCommand('planLsp.client.compareRevisions', guarded((args: unknown) => c.texts.compare(args))),
    vscode.commands.registerCommand('planLsp.client.showPlans', guarded(() => showPlans(() => c.requireSession().plans(), plansUi))),
    vscode.commands.registerCommand('planLsp.client.setApiKey', guarded(() => setup.apiKey())),
    vscode.commands.registerCommand('planLsp.client.clearApiKey', guarded(() => setup.clearApiKey())),
    vscode.commands.registerCommand('planLsp.client.setupModel', guarded(() => setup.preset())),
    vscode.commands.registerCommand('planLsp.client.changeModel', guarded(() => setup.model())),
    vscode.commands.registerCommand('planLsp.client.testConnection', guarded(() => c.actions.testConnection())),
    vscode.commands.registerCommand('planLsp.client.newSession', guarded(() => c.actions.newSession())),
    vscode.commands.registerCommand('planLsp.client.compact', guarded(() => c.compact())),
    vscode.commands.registerCommand('planLsp.client.allowProposal', guarded(() => c.requests.answerProposal(true))),
    vscode.commands.registerCommand('planLsp.client.denyProposal', guarded(() => c.requests.answerProposal(false))),
    vscode.commands.registerCommand('planLsp.client.openChat', guarded(() => c.chat.open())),
    vscode.commands.registerCommand('planLsp.client.openWalkthrough', guarded(openWalkthrough)),
    vscode.commands.registerCommand('planLsp.client.showLog', () => c.output.show(true)),
    vscode.commands.registerCommand('planLsp.restartServer', guarded(() => c.restart())),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('planLsp')) setup.onConfigurationChanged();
    }),
  );
  // A new user sees the sidebar (start-up progress, then the setup card) without looking for it.
  if (!context.workspaceState.get<boolean>(FIRST_RUN_KEY)) {
    void context.workspaceState.update(FIRST_RUN_KEY, true);
    void vscode.commands.executeCommand('workbench.view.extension.planLsp');
  }
  // Not awaited: the workbench resolves the chat view only once activate() returns, and the
  // view must show the start-up while it happens (a first run installs the server). Then the
  // editor's Markdown support is made ready, before the first plan needs it.
  void c.start().finally(() => prepareForMarkdown(c.texts, (line) => c.output.appendLine(line)));
}

export async function deactivate(): Promise<void> {
  await controller?.stop();
  controller = undefined;
}
