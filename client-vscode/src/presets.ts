/**
 * Model server presets offered by the setup card and *Plan LSP: Set Up Model*. Pure data: the
 * webview shows them, the extension host applies them to the user's settings.
 */

export type PresetId = 'openai' | 'anthropic' | 'ollama' | 'vllm' | 'lmstudio';

export interface Preset {
  id: PresetId;
  label: string;
  /** One line shown under the label. */
  detail: string;
  provider: 'openai' | 'anthropic';
  /** Empty: the provider's own endpoint. */
  baseUrl: string;
  /** The base URL is the user's to confirm (a local server may listen elsewhere). */
  askBaseUrl: boolean;
  /** Suggested model name; empty when only the user can know it. */
  model: string;
  /** A local server has no default model: the name must be given. */
  modelRequired: boolean;
  /** The service rejects requests without a key. */
  needsKey: boolean;
}

export const PRESETS: readonly Preset[] = [
  {
    id: 'openai', label: 'OpenAI', detail: 'api.openai.com, needs an API key',
    provider: 'openai', baseUrl: '', askBaseUrl: false, model: 'gpt-4o-mini', modelRequired: false, needsKey: true,
  },
  {
    id: 'anthropic', label: 'Anthropic', detail: 'api.anthropic.com, needs an API key',
    provider: 'anthropic', baseUrl: '', askBaseUrl: false, model: 'claude-sonnet-4-5', modelRequired: false, needsKey: true,
  },
  {
    id: 'ollama', label: 'Ollama', detail: 'local, http://localhost:11434/v1; give the model you pulled',
    provider: 'openai', baseUrl: 'http://localhost:11434/v1', askBaseUrl: true, model: '', modelRequired: true, needsKey: false,
  },
  {
    id: 'vllm', label: 'vLLM', detail: 'OpenAI-compatible server, http://localhost:8000/v1 by default',
    provider: 'openai', baseUrl: 'http://localhost:8000/v1', askBaseUrl: true, model: '', modelRequired: true, needsKey: false,
  },
  {
    id: 'lmstudio', label: 'LM Studio', detail: 'local server, http://localhost:1234/v1 by default',
    provider: 'openai', baseUrl: 'http://localhost:1234/v1', askBaseUrl: true, model: '', modelRequired: true, needsKey: false,
  },
];

export function presetById(id: string): Preset | undefined {
  return PRESETS.find((p) => p.id === id);
}

/** Why a base URL cannot be used, or null when it can. */
export function baseUrlProblem(value: string): string | null {
  const text = value.trim();
  if (!text) return 'Give the server\'s base URL, e.g. http://localhost:8000/v1';
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'Not a URL: it should look like http://localhost:8000/v1';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'The base URL must start with http:// or https://';
  return null;
}

/** The settings a preset writes (user scope), given what the user confirmed. */
export function presetSettings(preset: Preset, baseUrl: string, model: string): { provider: string; baseUrl: string; model: string } {
  return {
    provider: preset.provider,
    baseUrl: preset.askBaseUrl ? baseUrl.trim() : preset.baseUrl,
    model: model.trim(),
  };
}

/** The preset the settings in use came from (same provider and base URL), else one for "the
 * server at <base URL>" of that provider: for *Change Model*. */
export function presetForSettings(current: { provider: string; baseUrl: string }): Preset {
  const provider = current.provider === 'anthropic' ? 'anthropic' : 'openai';
  const same = PRESETS.find((p) => p.provider === provider && p.baseUrl === current.baseUrl);
  if (same) return same;
  const base = PRESETS.find((p) => p.provider === provider) as Preset;
  return current.baseUrl
    ? { ...base, label: 'The model server', askBaseUrl: true, baseUrl: current.baseUrl, model: '', modelRequired: true }
    : base;
}
