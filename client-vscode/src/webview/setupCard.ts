/**
 * The card at the top of the chat that tells a user what to do before the agent can work:
 * the server is starting (first-run install), could not start, no model is set up, or the
 * model server cannot be reached / rejects the key. Pure: computed from `ChatState`, tested
 * in Node, rendered by the webview.
 */
import type { ErrorFix, ProviderStatus } from '../wireTypes';
import { PRESETS, PresetId } from '../presets';
import type { ChatState, StartupStep } from './chatState';

/** A button on the card; the webview turns it into a message for the extension host. */
export type CardAction =
  | { action: 'preset'; preset: PresetId; label: string }
  | { action: 'openSetting'; setting: string; label: string }
  | { action: 'command'; command: string; label: string }
  | { action: 'testConnection'; label: string }
  | { action: 'showLog'; label: string }
  | { action: 'retryStart'; label: string };

export type CardKind = 'starting' | 'startFailed' | 'unconfigured' | 'problem' | 'testing' | 'connected';

export interface SetupCardView {
  kind: CardKind;
  title: string;
  lines: string[];
  /** 0..1 while starting. */
  progress?: number;
  actions: CardAction[];
}

/** The walkthrough (`publisher.name#id` of `contributes.walkthroughs`). */
export const WALKTHROUGH_ID = 'plan-lsp.plan-lsp#gettingStarted';

/** Client commands a card may run (the webview can ask for nothing else). */
export const CARD_COMMANDS = {
  setApiKey: 'planLsp.client.setApiKey',
  setupModel: 'planLsp.client.setupModel',
  changeModel: 'planLsp.client.changeModel',
} as const;

const SETTING_IDS: Record<string, string> = {
  baseUrl: 'planLsp.baseUrl',
  model: 'planLsp.model',
  provider: 'planLsp.provider',
};

/** The button that opens a setting, in the user's words (never the setting's key). */
const SETTING_LABELS: Record<string, string> = {
  baseUrl: 'Check the Server URL',
  model: 'Choose the Model',
  provider: 'Choose the Model Service',
};

/** What to do about an error, in words, by the server's error code (`error_help` in
 * plan_lsp/providers/base.py); null when the message says it all. `keySet`: whether an API
 * key is stored (null: not known). */
export function errorHint(code: string | null | undefined, keySet: boolean | null = null): string | null {
  switch (code) {
    case 'provider_unreachable':
      return 'The model server did not answer. Start it (Ollama: `ollama serve`; vLLM or LM Studio: start its server) ' +
        'and press Retry, or check the server URL.';
    case 'provider_auth':
      if (keySet === false) return 'No API key is set and this model server needs one: set the key, then press Retry.';
      if (keySet === true) return 'The model server refused the API key (wrong, expired, or without access): set the right key, then press Retry.';
      return 'The model server refused the API key, or needs one: set the key, then press Retry.';
    case 'provider_model':
      return 'The model server does not serve this model: choose one it has, then press Retry.';
    case 'provider_not_found':
      return 'Something answers at the server URL, but not a model API: check the URL (an OpenAI-compatible one usually ends in /v1), then press Retry.';
    case 'provider_no_tools':
      return 'This model ignores the tools it is offered, so the agent cannot work with it: choose a model with tool support.';
    case 'provider_unconfigured':
      return 'No model is set up yet: set one up, then press Retry.';
    case 'provider_rate_limited':
      return 'The model server is limiting requests: wait a moment, then press Retry.';
    case 'provider_failed':
      return 'The model server could not answer this request: press Retry, or see the log for its reply.';
    case 'context_full':
      return 'The conversation no longer fits the model: Compact it or start a new session, then press Retry.';
    default:
      return null;
  }
}

const STEP_TEXT: Record<StartupStep, string> = {
  probe: 'Looking for a Python that can run the plan-lsp server…',
  venv: 'First run: creating a private Python environment for the server…',
  // Measured on a quiet 2-core machine: 0.1 s venv + 2.6 s pip from the bundled wheels.
  install: 'First run: installing plan-lsp and its dependencies from the wheels this extension carries, no download (usually under 10 s)…',
  // Only the wheels specific to this Python or platform (8, about 9 MB): 7-13 s measured on
  // a fast mirror; all 40 packages from PyPI took a user 57 s.
  download:
    'First run: installing plan-lsp and its dependencies; this Python does not fit all the wheels the extension carries, so pip downloads the ones it lacks from the package index (usually under 30 s, longer on a slow network)…',
  launch: 'Starting the plan-lsp server…',
};

/** The action that fixes an error, from the server's `fix` (else from its `code`). */
export function fixAction(code: string | null | undefined, fix?: ErrorFix | null): CardAction | null {
  if (fix?.command) {
    return fix.command === CARD_COMMANDS.setApiKey
      ? { action: 'command', command: fix.command, label: 'Set API Key' }
      : { action: 'command', command: fix.command, label: `Run ${fix.command}` };
  }
  const setting = fix?.setting ?? settingForCode(code);
  if (setting === 'apiKey') return { action: 'command', command: CARD_COMMANDS.setApiKey, label: 'Set API Key' };
  if (setting && SETTING_IDS[setting]) {
    return { action: 'openSetting', setting: SETTING_IDS[setting], label: SETTING_LABELS[setting] };
  }
  if (code === 'provider_unconfigured') return { action: 'command', command: CARD_COMMANDS.setupModel, label: 'Set Up Model' };
  return null;
}

function settingForCode(code: string | null | undefined): string | undefined {
  switch (code) {
    case 'provider_unreachable':
    case 'provider_not_found':
      return 'baseUrl';
    case 'provider_auth':
      return 'apiKey';
    case 'provider_model':
    case 'provider_no_tools':
      return 'model';
    default:
      return undefined;
  }
}

/** The service a provider talks to, in words. */
function serviceName(provider: ProviderStatus): string {
  if (provider.name === 'anthropic') return /api\.anthropic\.com/.test(provider.baseUrl || 'api.anthropic.com') ? 'Anthropic' : `the Anthropic-compatible server at ${provider.baseUrl}`;
  if (provider.name === 'openai') return !provider.baseUrl || /api\.openai\.com/.test(provider.baseUrl) ? 'OpenAI' : `the model server at ${provider.baseUrl}`;
  if (provider.name === 'scripted') return 'scripted replies';
  return provider.baseUrl ? `the model server at ${provider.baseUrl}` : provider.name;
}

/** What is set up, in words: "Using OpenAI, model gpt-4o-mini." */
export function describeProvider(provider: ProviderStatus): string {
  return `Using ${serviceName(provider)}, ${provider.model ? `model ${provider.model}` : 'no model chosen yet'}.`;
}

const EDIT_ACTIONS: CardAction[] = [
  { action: 'openSetting', setting: 'planLsp.baseUrl', label: 'Change Server URL' },
  { action: 'openSetting', setting: 'planLsp.model', label: 'Change Model' },
  { action: 'command', command: CARD_COMMANDS.setApiKey, label: 'Set API Key' },
];

export interface ConnectionAdvice {
  title: string;
  /** What happened and what to do, in words. */
  advice: string;
  fix: CardAction | null;
}

/** A failed connection test told apart by cause — a missing key, a refused key, a server
 * that is down, a wrong URL, a model it does not have — each with its fix. `keySet`: whether
 * an API key is stored (null: not known). */
export function connectionAdvice(
  result: { code: string | null; message: string; fix?: ErrorFix | null },
  provider: ProviderStatus,
  keySet: boolean | null,
): ConnectionAdvice {
  const where = provider.baseUrl || serviceName(provider);
  const fix = fixAction(result.code, result.fix);
  switch (result.code) {
    case 'provider_auth':
      return keySet === false
        ? { title: 'This model server needs an API key', advice: 'No API key is set. Set one: it is kept in VS Code\'s secret storage and sent only to this server.', fix }
        : { title: 'The model server refused the API key', advice: 'The key is wrong, expired, or has no access to this model. Set the right key.', fix };
    case 'provider_unreachable':
      return {
        title: 'The model server does not answer',
        advice: `Nothing answers at ${where}. Start the server (Ollama: \`ollama serve\`; vLLM or LM Studio: start its server), or check the server URL.`,
        fix,
      };
    case 'provider_model':
      return { title: 'The model server does not have this model', advice: 'Choose a model the server serves.', fix };
    case 'provider_no_tools':
      return { title: 'This model cannot use tools', advice: errorHint(result.code) ?? '', fix };
    case 'provider_not_found':
      return {
        title: 'Wrong server URL',
        advice: `${where} answers, but not as a model API (HTTP 404). An OpenAI-compatible URL usually ends in /v1, e.g. http://localhost:8000/v1.`,
        fix: { action: 'openSetting', setting: SETTING_IDS.baseUrl, label: SETTING_LABELS.baseUrl },
      };
    default:
      return { title: 'The model server is not usable yet', advice: errorHint(result.code) ?? '', fix };
  }
}

function presetActions(): CardAction[] {
  return PRESETS.map((p) => ({ action: 'preset' as const, preset: p.id, label: p.label }));
}

/** The card to show, or null when the agent is ready. One card at a time, most urgent first. */
export function setupCardView(state: ChatState): SetupCardView | null {
  if (state.serverStatus === 'error' || state.serverStatus === 'stopped') {
    return {
      kind: 'startFailed',
      title: state.serverStatus === 'error' ? 'The plan-lsp server could not start' : 'The plan-lsp server stopped',
      lines: [state.serverMessage ?? 'See the log for why.'],
      actions: [
        { action: 'retryStart', label: 'Retry' },
        { action: 'showLog', label: 'Show Log' },
      ],
    };
  }
  if (state.serverStatus === 'starting') {
    const step = state.startup?.step ?? 'launch';
    const lines = [STEP_TEXT[step]];
    if (state.startup?.detail) lines.push(state.startup.detail);
    return {
      kind: 'starting',
      title: 'Starting Plan LSP',
      lines,
      progress: state.startup?.progress ?? 0,
      actions: [{ action: 'showLog', label: 'Show Log' }],
    };
  }
  const provider = state.session?.provider;
  if (!provider) return null;
  const { testing, result } = state.connection;
  if (testing) {
    return { kind: 'testing', title: 'Testing the connection…', lines: [describeProvider(provider)], actions: [] };
  }
  if (result && !result.ok) {
    const { title, advice, fix } = connectionAdvice(result, provider, state.setup?.keySet ?? null);
    return {
      kind: 'problem',
      title,
      lines: [...(advice ? [advice] : []), `The server said: ${result.message}`, describeProvider(provider)],
      actions: [...(fix ? [fix] : []), { action: 'testConnection', label: 'Test Connection' }, ...otherActions(fix)],
    };
  }
  if (!provider.configured) {
    // Before the user chose anything, no "Using OpenAI…": nothing was chosen.
    const chosen = state.setup?.chosen === true;
    return {
      kind: 'unconfigured',
      title: 'Set up a model',
      lines: chosen
        ? [provider.problem ?? 'The model server is not fully set up yet.', describeProvider(provider)]
        : ['Plan LSP needs a model to work with. Pick where yours runs; you can change it later.'],
      actions: [...presetActions(), ...EDIT_ACTIONS, { action: 'testConnection', label: 'Test Connection' }],
    };
  }
  if (provider.problem) {
    return {
      kind: 'problem',
      title: 'The model server is not usable yet',
      lines: [provider.problem, describeProvider(provider)],
      actions: [...EDIT_ACTIONS, { action: 'testConnection', label: 'Test Connection' }, { action: 'command', command: CARD_COMMANDS.setupModel, label: 'Choose Another' }],
    };
  }
  if (result?.ok) {
    return {
      kind: 'connected',
      title: 'Connected',
      lines: [result.message, describeProvider(provider)],
      actions: [
        { action: 'command', command: CARD_COMMANDS.changeModel, label: 'Change Model' },
        { action: 'command', command: CARD_COMMANDS.setApiKey, label: 'Change Key' },
        { action: 'testConnection', label: 'Test Again' },
      ],
    };
  }
  return null;
}

function target(a: CardAction): string {
  return a.action === 'openSetting' ? a.setting : a.action === 'command' ? a.command : a.action;
}

function otherActions(fix: CardAction | null): CardAction[] {
  const same = (a: CardAction): boolean => fix !== null && target(a) === target(fix);
  return [...EDIT_ACTIONS.filter((a) => !same(a)), { action: 'command', command: CARD_COMMANDS.setupModel, label: 'Choose Another' }];
}

/** Warnings under the card: workspace settings the client or the server ignored, and MCP
 * servers that failed. */
export function sidebarWarnings(state: ChatState): string[] {
  const failedMcp = (state.session?.mcpServers ?? [])
    .filter((s) => s.status === 'failed')
    .map((s) => `MCP server ${s.name} failed${s.error ? `: ${s.error}` : ''}; its tools are unavailable.`);
  return [...state.clientWarnings, ...(state.session?.configWarnings ?? []), ...failedMcp];
}
