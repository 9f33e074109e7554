/**
 * Setting up the model from the UI: presets (quick pick + input boxes that write the user's
 * settings), the API key (secret storage), and opening a setting. Nothing here writes to a
 * workspace: these settings are read from user scope only (settings.ts).
 */
import * as vscode from 'vscode';
import { ModelChoiceUi, chooseModel } from './modelChoice';
import { fetchModelList } from './modelList';
import { PRESETS, Preset, baseUrlProblem, presetById, presetForSettings, presetSettings } from './presets';

export const API_KEY_SECRET = 'planLsp.apiKey';

export async function pickPreset(): Promise<Preset | undefined> {
  const picked = await vscode.window.showQuickPick(
    PRESETS.map((p) => ({ label: p.label, detail: p.detail, preset: p })),
    { title: 'Plan LSP: which model server?', ignoreFocusOut: true },
  );
  return picked?.preset;
}

/** The set-up's boxes in VS Code (modelChoice.ts decides their order). */
function choiceUi(preset: Preset, secrets: vscode.SecretStorage): ModelChoiceUi {
  return {
    listModels: (req) => Promise.resolve(vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: `Plan LSP: asking ${preset.label} for its models` },
      () => fetchModelList(req),
    )),
    askKey: async (why) => {
      if (!(await askApiKey(secrets, why))) return undefined;
      return (await secrets.get(API_KEY_SECRET)) ?? '';
    },
    pickModel: async (models, current) => {
      const typed = { label: '$(edit) Another model…', description: undefined as string | undefined, detail: 'Type a model name the server has', model: null as string | null };
      const picked = await vscode.window.showQuickPick(
        [...models.map((model) => ({ label: model, description: model === current ? 'current' : undefined, detail: undefined, model })), typed],
        { title: `${preset.label}: model`, placeHolder: `The models ${preset.label} offers`, ignoreFocusOut: true },
      );
      return picked ? picked.model : undefined;
    },
    typeModel: (why, current) => Promise.resolve(vscode.window.showInputBox({
      title: `${preset.label}: model`,
      prompt: [why, preset.modelRequired ? 'The model name as the server knows it (required: a local server has no default).' : `The model name (empty: ${preset.model}).`]
        .filter(Boolean).join(' '),
      value: current || preset.model,
      placeHolder: preset.id === 'ollama' ? 'e.g. llama3.1:8b (see `ollama list`)' : undefined,
      ignoreFocusOut: true,
      validateInput: (value) => (preset.modelRequired && !value.trim() ? 'A model name is required for this server' : null),
    })),
  };
}

async function writeModelSettings(values: { provider: string; baseUrl: string; model: string }): Promise<void> {
  const config = vscode.workspace.getConfiguration('planLsp');
  await config.update('provider', values.provider, vscode.ConfigurationTarget.Global);
  await config.update('baseUrl', values.baseUrl, vscode.ConfigurationTarget.Global);
  await config.update('model', values.model, vscode.ConfigurationTarget.Global);
}

/** Asks what the preset cannot know (base URL of a local server; the key when the server
 * wants one; the model, from the server's list when it gives one), then writes provider,
 * base URL and model to the user's settings. False when the user cancelled. */
export async function applyPreset(
  preset: Preset,
  current: { baseUrl: string; model: string; provider: string },
  secrets: vscode.SecretStorage,
): Promise<boolean> {
  const apiKey = await secrets.get(API_KEY_SECRET);
  let baseUrl = preset.baseUrl;
  if (preset.askBaseUrl) {
    const answer = await vscode.window.showInputBox({
      title: `${preset.label}: base URL`,
      prompt: 'Where the server answers: its address, usually ending in /v1',
      value: current.baseUrl && current.provider === preset.provider ? current.baseUrl : preset.baseUrl,
      ignoreFocusOut: true,
      validateInput: (value) => baseUrlProblem(value),
    });
    if (answer === undefined) return false;
    baseUrl = answer;
  }
  const previous = current.provider === preset.provider ? current.model : '';
  const choice = await chooseModel(choiceUi(preset, secrets), preset, baseUrl, apiKey, previous);
  if (choice === undefined) return false;
  await writeModelSettings(presetSettings(preset, baseUrl, choice.model));
  return true;
}

/** *Change Model* (the Connected card): the model only, from the list of the server in use. */
export async function changeModel(
  current: { baseUrl: string; model: string; provider: string },
  secrets: vscode.SecretStorage,
): Promise<boolean> {
  const preset = presetForSettings(current);
  const baseUrl = current.baseUrl || preset.baseUrl;
  const choice = await chooseModel(choiceUi(preset, secrets), preset, baseUrl, await secrets.get(API_KEY_SECRET), current.model);
  if (choice === undefined) return false;
  await writeModelSettings({ provider: preset.provider, baseUrl: current.baseUrl, model: choice.model.trim() });
  return true;
}

/** Stores the API key in secret storage; `why` says why it is asked. False when the user
 * cancelled. */
export async function askApiKey(secrets: vscode.SecretStorage, why?: string): Promise<boolean> {
  const key = await vscode.window.showInputBox({
    title: 'Plan LSP: API key',
    prompt: `${why ? `${why} ` : ''}Stored in VS Code's secret storage, never in settings; sent only to your base URL.`,
    password: true,
    ignoreFocusOut: true,
  });
  if (key === undefined) return false;
  if (key.trim()) await secrets.store(API_KEY_SECRET, key.trim());
  else await secrets.delete(API_KEY_SECRET);
  return true;
}

/** Opens the Settings editor on one of this extension's settings (user scope). */
export async function openSetting(setting: string): Promise<void> {
  if (!/^planLsp\.[\w.]+$/.test(setting)) return;
  // The User tab: workspace values of these settings are ignored.
  await vscode.commands.executeCommand('workbench.action.openGlobalSettings', { query: setting });
}

export { presetById };
