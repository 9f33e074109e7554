/**
 * Setting up the model from the UI: presets (quick pick + input boxes that write the user's
 * settings), the API key (secret storage), and opening a setting. Nothing here writes to a
 * workspace: these settings are read from user scope only (settings.ts).
 */
import * as vscode from 'vscode';
import { listModels } from './modelList';
import { PRESETS, Preset, baseUrlProblem, presetById, presetSettings } from './presets';

export const API_KEY_SECRET = 'planLsp.apiKey';

export async function pickPreset(): Promise<Preset | undefined> {
  const picked = await vscode.window.showQuickPick(
    PRESETS.map((p) => ({ label: p.label, detail: p.detail, preset: p })),
    { title: 'Plan LSP: which model server?', ignoreFocusOut: true },
  );
  return picked?.preset;
}

/** The model, picked from the server's list when it gives one, else typed. Undefined when
 * the user cancelled. */
async function chooseModel(preset: Preset, baseUrl: string, apiKey: string | undefined, current: string): Promise<string | undefined> {
  const models = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Window, title: `Plan LSP: asking ${preset.label} for its models` },
    () => listModels({ provider: preset.provider, baseUrl, apiKey }),
  );
  if (models && models.length > 0) {
    const typed = { label: '$(edit) Another model…', detail: 'Type a model name the server has', model: undefined as string | undefined };
    const picked = await vscode.window.showQuickPick(
      [
        ...models.map((model) => ({ label: model, description: model === current ? 'current' : undefined, detail: undefined, model })),
        typed,
      ],
      { title: `${preset.label}: model`, placeHolder: `The models ${preset.label} offers`, ignoreFocusOut: true },
    );
    if (!picked) return undefined;
    if (picked.model !== undefined) return picked.model;
  }
  return vscode.window.showInputBox({
    title: `${preset.label}: model`,
    prompt: preset.modelRequired
      ? 'The model name as the server knows it (required: a local server has no default)'
      : `The model name (empty: ${preset.model})`,
    value: current || preset.model,
    placeHolder: preset.id === 'ollama' ? 'e.g. llama3.1:8b (see `ollama list`)' : undefined,
    ignoreFocusOut: true,
    validateInput: (value) => (preset.modelRequired && !value.trim() ? 'A model name is required for this server' : null),
  });
}

/** Asks what the preset cannot know (base URL of a local server, model name: from the
 * server's list when it answers), then writes provider, base URL and model to the user's
 * settings. `apiKey`: the stored key, sent with the list request. False when the user
 * cancelled. */
export async function applyPreset(
  preset: Preset,
  current: { baseUrl: string; model: string; provider: string },
  apiKey?: string,
): Promise<boolean> {
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
  const model = await chooseModel(preset, baseUrl, apiKey, current.provider === preset.provider ? current.model : '');
  if (model === undefined) return false;
  const values = presetSettings(preset, baseUrl, model);
  const config = vscode.workspace.getConfiguration('planLsp');
  await config.update('provider', values.provider, vscode.ConfigurationTarget.Global);
  await config.update('baseUrl', values.baseUrl, vscode.ConfigurationTarget.Global);
  await config.update('model', values.model, vscode.ConfigurationTarget.Global);
  return true;
}

/** Stores the API key in secret storage. False when the user cancelled. */
export async function askApiKey(secrets: vscode.SecretStorage): Promise<boolean> {
  const key = await vscode.window.showInputBox({
    title: 'Plan LSP: API key',
    prompt: "Stored in VS Code's secret storage, never in settings; sent only to your base URL.",
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
